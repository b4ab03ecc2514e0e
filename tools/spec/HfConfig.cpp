//===- HfConfig.cpp - Specs from a Hugging Face config.json ---------------===//
//
// config.json is JSON, which yaml-cpp reads as YAML; its marks give the
// errors their positions.
//
//===----------------------------------------------------------------------===//

#include "tools/spec/HfConfig.h"
#include "tools/spec/YamlProbe.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <sstream>

namespace loom::spec {
namespace {

class ConfigReader {
public:
  ConfigReader(const YAML::Node &root, std::string file,
               std::vector<Diagnostic> &errors)
      : root(root), file(std::move(file)), errors(errors) {}

  void error(const YAML::Node &at, const std::string &message) {
    const YAML::Mark mark = at ? at.Mark() : root.Mark();
    errors.push_back({file, std::max(mark.line, 0) + 1,
                      std::max(mark.column, 0) + 1, message});
  }

  /// Key `key` of `map` as a T ("an integer", "a number": `what`);
  /// `fallback` when absent, an error when there is none.
  template <typename T>
  T read(const YAML::Node &map, const char *key, const char *what,
         std::optional<T> fallback) {
    const YAML::Node node = map[key];
    if (!node || node.IsNull()) {
      if (!fallback)
        error(map, std::string("config.json has no '") + key + "'");
      return fallback.value_or(T());
    }
    T value = T();
    if (!node.IsScalar() || !YAML::convert<T>::decode(node, value)) {
      error(node, std::string("'") + key + "' must be " + what);
      return T();
    }
    return value;
  }
  int64_t integer(const YAML::Node &map, const char *key,
                  std::optional<int64_t> fallback = std::nullopt) {
    return read<int64_t>(map, key, "an integer", fallback);
  }
  double number(const YAML::Node &map, const char *key,
                std::optional<double> fallback = std::nullopt) {
    return read<double>(map, key, "a number", fallback);
  }

  const YAML::Node root;
  const std::string file;
  std::vector<Diagnostic> &errors;
};

/// Shortest text that reads back as the same double (whole numbers below
/// 2^53 without an exponent).
std::string exact(double value) {
  char buffer[40];
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
    return buffer;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

/// One rank's heads of `map[key]` heads split over --tp ranks; an error at
/// the key when they do not split evenly.
int64_t headsPerRank(ConfigReader &r, const YAML::Node &map, const char *key,
                     int64_t tp) {
  const int64_t heads = r.integer(map, key);
  if (tp < 1 || (heads > 0 && heads % tp != 0))
    r.error(map[key], std::string("'") + key + "' (" + std::to_string(heads) +
                          ") must split evenly over --tp " +
                          std::to_string(tp));
  return tp > 0 ? heads / tp : 0;
}

/// The spec's name (--name, else `family`_tp<N>) and description line of a
/// TP shard.
std::string shardHeader(const HfSpecOptions &o, const std::string &family,
                        const std::string &what, int64_t shard) {
  return "name: " +
         (o.name.empty() ? family + "_tp" + std::to_string(o.tp) : o.name) +
         "\ndescription: " + what + " from config.json, TP" +
         std::to_string(o.tp) + " shard (" + std::to_string(shard) +
         " heads)";
}

std::string decoderSpec(ConfigReader &r, const std::string &type,
                        const HfSpecOptions &o) {
  const YAML::Node &c = r.root;
  if (o.tp != 1)
    r.error(c["model_type"], "a decoder spec is one GPU's whole layer (Loom "
                             "has no all-reduce): --tp must be 1, got " +
                                 std::to_string(o.tp));
  // Llama 3.1's frequency scaling is the one the bodies implement.
  std::ostringstream scalingSpec;
  if (const YAML::Node scaling = c["rope_scaling"];
      scaling && !scaling.IsNull()) {
    const YAML::Node type =
        scaling["rope_type"] ? scaling["rope_type"] : scaling["type"];
    if (!scaling.IsMap() || !type || !type.IsScalar() ||
        type.as<std::string>() != "llama3")
      r.error(type ? type : scaling,
              "'rope_scaling' must be Llama 3.1's (rope_type 'llama3'); "
              "other RoPE scalings are not implemented");
    else
      scalingSpec << "  rope_scaling:\n"
                  << "    factor: " << exact(r.number(scaling, "factor")) << "\n"
                  << "    low_freq_factor: "
                  << exact(r.number(scaling, "low_freq_factor")) << "\n"
                  << "    high_freq_factor: "
                  << exact(r.number(scaling, "high_freq_factor")) << "\n"
                  << "    original_max_position_embeddings: "
                  << r.integer(scaling, "original_max_position_embeddings")
                  << "\n";
  }
  const int64_t hidden = r.integer(c, "hidden_size");
  const int64_t heads = r.integer(c, "num_attention_heads");
  const int64_t kvHeads = r.integer(c, "num_key_value_heads", heads);
  const int64_t headDim =
      r.integer(c, "head_dim", heads > 0 ? hidden / heads : 0);
  std::ostringstream y;
  y << "name: " << (o.name.empty() ? type + "_decoder" : o.name) << "\n"
    << "description: " << type << " decoder stack from config.json, decode "
    << "step, without the LM head\n"
    << "decoder:\n"
    << "  layers: " << r.integer(c, "num_hidden_layers") << "\n"
    << "  hidden: " << hidden << "\n"
    << "  num_q_heads: " << heads << "\n"
    << "  num_kv_heads: " << kvHeads << "\n"
    << "  head_dim: " << headDim << "\n"
    << "  ffn: " << r.integer(c, "intermediate_size") << "\n"
    << "  rms_eps: " << exact(r.number(c, "rms_norm_eps", 1e-6)) << "\n"
    << "  rope_theta: " << exact(r.number(c, "rope_theta", 10000)) << "\n"
    << scalingSpec.str() << "  qk_norm: " << (type == "qwen3" ? "true" : "false") << "\n"
    << "  page_size: " << o.pageSize.value_or(16) << "\n"
    << "  max_batch: " << o.maxBatch.value_or(32) << "\n"
    << "  max_pages: " << o.maxPages.value_or(4096) << "\n"
    << "  vocab: " << r.integer(c, "vocab_size") << "\n";
  return y.str();
}

std::string mlaSpec(ConfigReader &r, const HfSpecOptions &o) {
  const YAML::Node &c = r.root;
  const int64_t shard = headsPerRank(r, c, "num_attention_heads", o.tp);
  const int64_t nope = r.integer(c, "qk_nope_head_dim");
  const int64_t rope = r.integer(c, "qk_rope_head_dim");
  // The absorbed form's scale: (nope + rope)^-1/2, times mscale^2 under YaRN
  // (mscale = 0.1 * mscale_all_dim * ln(factor) + 1, DeepSeek-V3's
  // yarn_get_mscale), as the model's attention applies it.
  double scale = nope + rope > 0 ? 1.0 / std::sqrt(double(nope + rope)) : 0;
  if (const YAML::Node scaling = c["rope_scaling"];
      scaling && scaling.IsMap()) {
    const YAML::Node kind = scaling["type"] ? scaling["type"]
                                            : scaling["rope_type"];
    if (!kind || kind.as<std::string>("") != "yarn") {
      r.error(scaling, "'rope_scaling' of DeepSeek-V3 must be 'yarn'");
    } else {
      const double factor = r.number(scaling, "factor");
      const double all = r.number(scaling, "mscale_all_dim", 0);
      if (factor > 1 && all != 0) {
        const double m = 0.1 * all * std::log(factor) + 1;
        scale *= m * m;
      }
    }
  }
  const int64_t pageSize = o.pageSize.value_or(1);
  std::ostringstream y;
  y << shardHeader(o, "deepseek_v3", "DeepSeek-V3 MLA decode", shard)
    << ", page size " << pageSize << "\n"
    << "mla_decode:\n"
    << "  num_heads: " << shard << "\n"
    << "  head_dim_ckv: " << r.integer(c, "kv_lora_rank") << "\n"
    << "  head_dim_kpe: " << rope << "\n"
    << "  page_size: " << pageSize << "\n"
    // The op's attribute is f32: the spec says the value the kernel uses.
    << "  sm_scale: " << exact(double(float(scale))) << "\n"
    << "  max_batch: " << o.maxBatch.value_or(128) << "\n"
    << "  max_pages: "
    << o.maxPages.value_or(std::max<int64_t>(1, (int64_t(1) << 20) / pageSize))
    << "\n";
  return y.str();
}

std::string kdaSpec(ConfigReader &r, const HfSpecOptions &o) {
  const YAML::Node &c = r.root;
  const YAML::Node lin = c["linear_attn_config"];
  if (!lin || !lin.IsMap()) {
    r.error(lin ? lin : c["model_type"],
            "config.json has no 'linear_attn_config' object (the KDA "
            "layers' heads and head_dim)");
    return "";
  }
  if (o.pageSize || o.maxPages)
    r.error(c["model_type"], "a KDA prefill spec has no KV pages: "
                             "--page-size and --max-pages do not apply");
  const int64_t shard = headsPerRank(r, lin, "num_heads", o.tp);
  const int64_t headDim = r.integer(lin, "head_dim");
  std::ostringstream y;
  y << shardHeader(o, "kimi_linear", "Kimi-Linear KDA prefill", shard) << "\n"
    << "kda_prefill:\n"
    << "  num_heads: " << shard << "\n"
    << "  head_dim_k: " << headDim << "\n"
    << "  head_dim_v: " << headDim << "\n";
  // A lower bound makes the gate the bounded (scaled-sigmoid) one; without,
  // the model's gate is the unbounded -exp(A) softplus one.
  if (const YAML::Node bound = lin["gate_lower_bound"];
      bound && !bound.IsNull())
    y << "  gate: bounded\n"
      << "  lower_bound: " << exact(r.number(lin, "gate_lower_bound")) << "\n";
  else
    y << "  gate: unbounded\n";
  y << "  chunk_size: 64\n"
    << "  qk_l2norm: true\n"
    << "  initial_state: true\n"
    << "  max_tokens: " << o.maxTokens.value_or(131072) << "\n"
    << "  max_seqs: " << o.maxBatch.value_or(64) << "\n"
    << "  dtype: bf16\n";
  return y.str();
}

} // namespace

HfSpecResult specFromHfConfig(const std::string &json, const std::string &file,
                              const HfSpecOptions &options) {
  HfSpecResult result;
  try {
    if (std::optional<std::string> trouble = yamlParseTrouble(json)) {
      result.errors.push_back({file, 1, 1, *trouble});
      return result;
    }
    const YAML::Node root = YAML::Load(json);
    ConfigReader r(root, file, result.errors);
    if (!root.IsMap()) {
      r.error(root, "config.json must be an object");
      return result;
    }
    const YAML::Node typeNode = root["model_type"];
    const std::string type =
        typeNode && typeNode.IsScalar() ? typeNode.Scalar() : "";
    std::string yaml;
    if (type == "llama" || type == "qwen3")
      yaml = decoderSpec(r, type, options);
    else if (type == "deepseek_v3")
      yaml = mlaSpec(r, options);
    else if (type == "kimi_linear")
      yaml = kdaSpec(r, options);
    else
      r.error(typeNode, "model_type '" + type +
                            "' is not one loomc reads (llama, qwen3, "
                            "deepseek_v3, kimi_linear)");
    if (result.errors.empty())
      result.yaml = "# Generated by loomc --hf-config from " + file + "\n" +
                    yaml;
  } catch (const YAML::Exception &e) {
    result.errors.push_back({file, std::max(e.mark.line, 0) + 1,
                             std::max(e.mark.column, 0) + 1,
                             "invalid JSON: " + e.msg});
  } catch (const std::exception &e) {
    result.errors.push_back({file, 1, 1, std::string("cannot read: ") + e.what()});
  }
  return result;
}

} // namespace loom::spec
