//===- Report.cpp - JSON and Markdown writers -----------------------------===//
//
// No JSON library: the project depends on Debian/PyPI packages only, and the
// writer needs a dozen lines. Doubles are printed with %.9g, so a reader
// recomputing max(memory_us, compute_us) gets time_us back to 1e-9.
//
//===----------------------------------------------------------------------===//
#include "bench/model/Report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace loom::model {
namespace {

std::string format(const char *fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

/// At least three significant digits, no exponent: 0.00552, 4.82, 2936.
std::string significant(double x) {
  int decimals = 0;
  if (x > 0 && x < 100)
    decimals = std::min(6, 2 - int(std::floor(std::log10(x))));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

/// A streaming writer: objects and arrays nest, commas and indentation
/// follow; `inline` containers stay on one line.
class JsonWriter {
public:
  explicit JsonWriter(std::ostream &os) : os(os) {}

  void open(char bracket, bool oneLine = false) {
    separate();
    os << bracket;
    levels.push_back({oneLine, true});
  }
  void close(char bracket) {
    Level level = levels.back();
    levels.pop_back();
    if (!level.oneLine && !level.first)
      newline();
    os << bracket;
    if (levels.empty())
      os << "\n";
  }
  void key(const std::string &name) {
    separate();
    os << jsonString(name) << ": ";
    pendingKey = true;
  }
  void raw(const std::string &text) {
    separate();
    os << text;
  }
  void string(const std::string &text) { raw(jsonString(text)); }
  void integer(int64_t v) { raw(std::to_string(v)); }
  void number(double v) { raw(format("%.9g", v)); }
  void boolean(bool v) { raw(v ? "true" : "false"); }

  template <typename T> void field(const std::string &name, T value);

private:
  struct Level {
    bool oneLine;
    bool first;
  };
  void newline() { os << "\n" << std::string(2 * levels.size(), ' '); }
  /// Before a value or key: the comma and line break it needs.
  void separate() {
    if (pendingKey) {
      pendingKey = false;
      return;
    }
    if (levels.empty())
      return;
    Level &level = levels.back();
    if (!level.first)
      os << (level.oneLine ? ", " : ",");
    if (!level.oneLine)
      newline();
    level.first = false;
  }

  std::ostream &os;
  std::vector<Level> levels;
  bool pendingKey = false;
};

template <> void JsonWriter::field(const std::string &n, int64_t v) { key(n); integer(v); }
template <> void JsonWriter::field(const std::string &n, double v) { key(n); number(v); }
template <> void JsonWriter::field(const std::string &n, bool v) { key(n); boolean(v); }
template <> void JsonWriter::field(const std::string &n, std::string v) { key(n); string(v); }
template <> void JsonWriter::field(const std::string &n, const char *v) { key(n); string(v); }

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void writeShape(JsonWriter &j, const Workload &w) {
  j.key("shape");
  j.open('{', true);
  switch (w.family) {
  case Family::MlaDecode:
    j.field("num_heads", w.mla.numHeads);
    j.field("head_dim_ckv", w.mla.headDimCkv);
    j.field("head_dim_kpe", w.mla.headDimKpe);
    j.field("page_size", w.mla.pageSize);
    j.field("dtype", spec::dtypeName(w.mla.dtype));
    break;
  case Family::KdaPrefill:
    j.field("num_heads", w.kda.numHeads);
    j.field("head_dim_k", w.kda.headDimK);
    j.field("head_dim_v", w.kda.headDimV);
    j.field("chunk_size", w.kda.chunkSize);
    j.field("initial_state", w.kda.initialState);
    j.field("dtype", spec::dtypeName(w.kda.dtype));
    j.field("state_dtype", "f32");
    break;
  case Family::Decoder:
    j.field("layers", w.decoder.layers);
    j.field("hidden", w.decoder.hidden);
    j.field("num_q_heads", w.decoder.numQHeads);
    j.field("num_kv_heads", w.decoder.numKvHeads);
    j.field("head_dim", w.decoder.headDim);
    j.field("ffn", w.decoder.ffn);
    j.field("qk_norm", w.decoder.qkNorm);
    j.field("head", w.decoder.head);
    j.field("page_size", w.decoder.pageSize);
    j.field("dtype", spec::dtypeName(w.decoder.dtype));
    break;
  }
  j.close('}');
}

void writeWorkload(JsonWriter &j, const Workload &w,
                   const std::vector<const ChipInfo *> &chips) {
  Cost cost = w.cost();
  j.key(w.key);
  j.open('{');
  j.field("family", familyName(w.family));
  j.field("set", w.set);
  j.field("index", w.index);
  j.field("name", w.name);
  if (w.family == Family::Decoder) {
    j.field("model", w.name);
    j.field("layers", w.decoder.layers);
    j.field("context", w.context);
  }
  if (w.family == Family::KdaPrefill) {
    // Both gates read and write the same tensors and do the same matrix
    // work: one row serves both.
    j.key("gates");
    j.open('[', true);
    j.string("unbounded");
    j.string("bounded");
    j.close(']');
  }
  j.field("source", baseName(w.file) + ":" + std::to_string(w.line));
  writeShape(j, w);
  j.field("batch", w.batch);
  j.field("lengths_given", w.lengthsGiven);
  j.key("lengths");
  j.open('[', true);
  for (int64_t len : w.lengths)
    j.integer(len);
  j.close(']');
  j.field("total_length", w.totalLength());
  j.key("bytes");
  j.open('{', true);
  j.field("kv_read", cost.bytes.kvRead);
  j.field("kv_write", cost.bytes.kvWrite);
  j.field("weights", cost.bytes.weights);
  j.field("inputs", cost.bytes.inputs);
  j.field("outputs", cost.bytes.outputs);
  j.field("state_read", cost.bytes.stateRead);
  j.field("state_write", cost.bytes.stateWrite);
  j.field("meta", cost.bytes.meta);
  j.field("total", cost.bytes.total());
  j.close('}');
  j.field("flops", cost.flops);
  j.field("flop_per_byte", double(cost.flops) / double(cost.bytes.total()));
  j.key("estimate");
  j.open('{');
  for (const ChipInfo *chip : chips) {
    Roofline r = roofline(cost, *chip);
    j.key(chip->name);
    j.open('{', true);
    j.field("memory_us", r.memoryUs);
    j.field("compute_us", r.computeUs);
    j.field("time_us", r.timeUs);
    j.field("bound", r.computeBound ? "compute" : "memory");
    j.close('}');
  }
  j.close('}');
  j.field("label", kModelLabel);
  j.close('}');
}

/// The row's name in a Markdown table (its family is the section).
std::string displayName(const Workload &w) {
  switch (w.family) {
  case Family::MlaDecode:
    if (w.set == "trace")
      return "trace/" + std::to_string(w.index) + " (" + w.name.substr(0, 8) + ")";
    return w.set + "/" + std::to_string(w.index) +
           (w.lengthsGiven == "list" ? "" : " " + w.lengthsGiven);
  case Family::KdaPrefill:
    return w.name + (w.kda.initialState ? " (h0)" : "");
  case Family::Decoder:
    return w.key.substr(std::string("decoder/").size());
  }
  return w.key;
}

const char *lengthColumn(Family family) {
  switch (family) {
  case Family::MlaDecode:
    return "KV tokens";
  case Family::KdaPrefill:
    return "tokens";
  case Family::Decoder:
    return "context";
  }
  return "";
}

void writeChip(std::ostream &os, const std::vector<Workload> &workloads,
               const ChipInfo &chip) {
  os << "# Loom model estimate: " << chip.name << " (" << chip.arch << ")\n\n"
     << "**Model, not measured.** Every number below is arithmetic on the "
     << "workloads' shapes and the chip table; nothing here ran on a GPU.\n\n"
     << "Generated by `loom-model --chip " << chip.name << " --md FILE` "
     << "(`bench/model/`; regenerate every file here with `ninja -C build "
     << "loom-model-results`) from the workloads in `bench/workloads/` and the "
     << "shapes in `configs/`. Chip facts from `targets/chips/ChipTable.cpp`: "
     << chip.workers << (chip.vendor == Vendor::Amd ? " CUs" : " SMs") << ", HBM " << chip.hbmGBps << " GB/s, dense bf16 "
     << chip.bf16Tflops << " TFLOP/s.\n\n"
     << "Per workload: the bytes a kernel must move once (KV cache, weights, "
     << "inputs, outputs, KDA state, int32 page tables and lengths) and the "
     << "matrix FLOPs; model time = max(bytes / HBM bandwidth, FLOPs / dense "
     << "bf16 peak), and which of the two is larger (bound). Both are peak "
     << "rates, so the model time is a lower bound, not a prediction. "
     << "`bench/model/README.md` gives every formula. KDA rows hold for both "
     << "gates (same bytes and FLOPs).\n";

  for (Family family :
       {Family::MlaDecode, Family::KdaPrefill, Family::Decoder}) {
    int count = 0, computeBound = 0;
    for (const Workload &w : workloads)
      if (w.family == family) {
        ++count;
        computeBound += roofline(w.cost(), chip).computeBound;
      }
    if (count == 0)
      continue;
    os << "\n## " << familyName(family) << " (" << count << " workloads: "
       << count - computeBound << " memory-bound, " << computeBound
       << " compute-bound)\n\n"
       << "| workload | batch | " << lengthColumn(family)
       << " | MB moved | GFLOP | FLOP/B | memory µs | compute µs | model µs "
          "| bound | source |\n"
       << "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|\n";
    for (const Workload &w : workloads) {
      if (w.family != family)
        continue;
      Cost cost = w.cost();
      Roofline r = roofline(cost, chip);
      int64_t length = family == Family::Decoder ? w.context : w.totalLength();
      os << "| " << displayName(w) << " | " << w.batch << " | " << length
         << " | " << significant(double(cost.bytes.total()) / 1e6) << " | "
         << significant(double(cost.flops) / 1e9) << " | "
         << significant(double(cost.flops) / double(cost.bytes.total()))
         << " | " << significant(r.memoryUs) << " | "
         << significant(r.computeUs) << " | " << significant(r.timeUs)
         << " | " << (r.computeBound ? "compute" : "memory") << " | "
         << kModelLabel << " |\n";
    }
  }
}

} // namespace

void writeJson(std::ostream &os, const std::vector<Workload> &workloads,
               const std::vector<const ChipInfo *> &chips) {
  JsonWriter j(os);
  j.open('{');
  j.field("schema", kJsonSchema);
  j.field("label", kModelLabel);
  j.field("method", "time_us = max(bytes.total / hbm_gbps, flops / "
                    "bf16_tflops); bound names the larger term");
  j.key("chips");
  j.open('{');
  for (const ChipInfo *chip : chips) {
    j.key(chip->name);
    j.open('{', true);
    j.field("arch", chip->arch);
    j.field("workers", chip->workers);
    j.field("hbm_gbps", chip->hbmGBps);
    j.field("bf16_tflops", chip->bf16Tflops);
    j.close('}');
  }
  j.close('}');
  j.key("workloads");
  j.open('{');
  for (const Workload &w : workloads)
    writeWorkload(j, w, chips);
  j.close('}');
  j.close('}');
}

void writeMarkdown(std::ostream &os, const std::vector<Workload> &workloads,
                   const std::vector<const ChipInfo *> &chips) {
  for (size_t i = 0; i < chips.size(); ++i) {
    if (i)
      os << "\n";
    writeChip(os, workloads, *chips[i]);
  }
}

} // namespace loom::model
