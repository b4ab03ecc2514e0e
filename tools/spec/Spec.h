//===- Spec.h - YAML kernel specs as plain C++ ------------------*- C++ -*-===//
//
// A kernel spec names one kernel family (MLA decode, KDA prefill, decoder
// layers) and its compile-time shapes. The loader (SpecLoader.cpp) reads YAML
// with yaml-cpp, which throws; it catches everything and returns diagnostics,
// so callers built with -fno-exceptions (MLIR code) can use it. The schema is
// documented in configs/README.md.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_SPEC_SPEC_H
#define LOOM_TOOLS_SPEC_SPEC_H

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace loom::spec {

/// Element types a spec may name.
enum class DType { BF16, F16, F32 };

/// `mla_decode:` — DeepSeek-style absorbed latent attention over a paged cache.
struct MlaDecodeSpec {
  int64_t numHeads = 0;     ///< num_heads (query heads on this GPU)
  int64_t headDimCkv = 512; ///< head_dim_ckv: compressed KV (also V) width
  int64_t headDimKpe = 64;  ///< head_dim_kpe: decoupled RoPE key width
  int64_t pageSize = 1;     ///< page_size: tokens per KV page
  double smScale = 0;       ///< sm_scale: softmax scale applied to q.k
  int64_t maxBatch = 0;     ///< max_batch: most requests in one launch
  int64_t maxPages = 0;     ///< max_pages: size of the page pool
  DType dtype = DType::BF16;
};

enum class KdaGate { Unbounded, Bounded };

/// `kda_prefill:` — Kimi Delta Attention, chunked gated delta rule, varlen.
struct KdaPrefillSpec {
  int64_t numHeads = 0;    ///< num_heads
  int64_t headDimK = 128;  ///< head_dim_k
  int64_t headDimV = 128;  ///< head_dim_v
  KdaGate gate = KdaGate::Unbounded;
  std::optional<double> lowerBound; ///< lower_bound, only with gate: bounded
  int64_t chunkSize = 64;  ///< chunk_size: 16 or 64
  bool qkL2Norm = true;    ///< qk_l2norm
  bool initialState = false; ///< initial_state: take an fp32 initial state
  std::optional<double> scale; ///< scale; default head_dim_k^-0.5
  int64_t maxTokens = 0;   ///< max_tokens: packed tokens in one launch
  int64_t maxSeqs = 0;     ///< max_seqs: sequences in one launch
  DType dtype = DType::BF16;
};

/// `decoder:` — a stack of Llama/Qwen-shaped decoder layers (decode step).
struct DecoderSpec {
  int64_t layers = 0;      ///< layers
  int64_t hidden = 0;      ///< hidden
  int64_t numQHeads = 0;   ///< num_q_heads
  int64_t numKvHeads = 0;  ///< num_kv_heads
  int64_t headDim = 0;     ///< head_dim
  int64_t ffn = 0;         ///< ffn (intermediate size)
  double rmsEps = 1e-5;    ///< rms_eps
  double ropeTheta = 10000; ///< rope_theta
  /// rope_scaling (Llama 3.1's, HF rope_type "llama3"): factor 0 = none.
  struct RopeScaling {
    double factor = 0;                   ///< factor
    double lowFreqFactor = 1;            ///< low_freq_factor
    double highFreqFactor = 4;           ///< high_freq_factor
    int64_t originalMaxPosition = 8192;  ///< original_max_position_embeddings
  } ropeScaling;
  bool qkNorm = false;     ///< qk_norm: per-head RMSNorm on q and k (Qwen3)
  int64_t pageSize = 16;   ///< page_size (KV cache)
  int64_t maxBatch = 0;    ///< max_batch
  int64_t maxPages = 0;    ///< max_pages: KV pages per layer in the pool
  int64_t vocab = 0;       ///< vocab: with `head: true`
  bool head = false;       ///< head: add embedding, final norm, LM head, argmax
  DType dtype = DType::BF16;
};

/// A whole spec file.
struct Spec {
  std::string name;                 ///< name: symbol of the generated graph
  std::string description;          ///< description (optional)
  std::vector<std::string> targets; ///< targets: chips this spec is for
                                    ///< (empty = any known chip)
  std::variant<MlaDecodeSpec, KdaPrefillSpec, DecoderSpec> family;
};

/// One problem found in a spec, with a 1-based position in its file.
struct Diagnostic {
  std::string file;
  int line = 0;   ///< 1-based
  int column = 0; ///< 1-based
  std::string message;
  /// "file:line:col: error: message"
  std::string str() const;
};

/// The loader's result: a spec when there are no diagnostics.
struct LoadResult {
  std::optional<Spec> spec;
  std::vector<Diagnostic> errors;
  bool ok() const { return spec.has_value() && errors.empty(); }
};

/// Parse `text` as a spec; `file` only names it in diagnostics. Reports every
/// error it can find (not only the first); never throws.
LoadResult parseSpec(const std::string &text, const std::string &file);

/// Read and parse a spec file; a missing file is a diagnostic too.
LoadResult loadSpecFile(const std::string &path);

const char *dtypeName(DType dtype); ///< "bf16", "f16", "f32"
const char *familyName(const Spec &spec); ///< "mla_decode", ...

} // namespace loom::spec

#endif // LOOM_TOOLS_SPEC_SPEC_H
