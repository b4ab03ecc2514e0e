//===- HfConfig.h - Specs from a Hugging Face config.json -------*- C++ -*-===//
//
// A model's published config.json (the shapes, no weights) turned into the
// spec of its attention or decoder step: Llama-3 and Qwen3 decoders,
// DeepSeek-V3 MLA decode (its YaRN-corrected softmax scale included),
// Kimi-Linear KDA prefill (its linear_attn_config). The
// result is spec YAML, which the spec loader then reads like any file, so
// every range check applies to it. What the config asks for and Loom cannot
// honour (a RoPE scaling the decoder does not implement, tensor parallelism
// of a whole decoder layer, a model type it does not know) is an error that
// names the key.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_SPEC_HFCONFIG_H
#define LOOM_TOOLS_SPEC_HFCONFIG_H

#include "tools/spec/Spec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::spec {

/// What a config.json does not say: the deployment.
struct HfSpecOptions {
  int64_t tp = 1;                  ///< tensor-parallel ranks (MLA heads split)
  std::optional<int64_t> pageSize; ///< default: 1 for MLA, 16 for decoders
  std::optional<int64_t> maxBatch; ///< default: 128 for MLA, 32 for decoders,
                                   ///< 64 sequences for KDA
  std::optional<int64_t> maxPages; ///< default: 2^20 tokens' worth (MLA), 4096
  std::optional<int64_t> maxTokens; ///< KDA's packed tokens, default 131072
  std::string name;                ///< default: from model_type and tp
};

struct HfSpecResult {
  std::string yaml;                ///< the spec, when errors is empty
  std::vector<Diagnostic> errors;  ///< file:line:col of the offending key
};

/// The spec for config.json text `json` (read from `file`, for messages).
HfSpecResult specFromHfConfig(const std::string &json, const std::string &file,
                              const HfSpecOptions &options);

} // namespace loom::spec

#endif // LOOM_TOOLS_SPEC_HFCONFIG_H
