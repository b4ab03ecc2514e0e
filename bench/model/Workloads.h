//===- Workloads.h - The benchmark workloads, read for the model -*- C++ -*-===//
//
// Reads bench/workloads/ (the MLA trace, the MLA tiers, KDA prefill, decoder
// stacks; their README says what each is) and the specs in configs/ that
// give the shapes the workload files leave out, through LoomSpec:
//
//   MLA trace      configs/mla_decode/deepseek_v3_tp8.yaml (H, Dc, Dp, page size, dtype)
//   MLA tiers      the same spec's Dc, Dp and dtype; num_heads, page_size from the tier
//   KDA            configs/kda_prefill/kimi_linear_48b.yaml (K, V, chunk, dtype);
//                  heads and initial_state from the workload
//   decoder        configs/decoder/<model>.yaml; layers from the workload
//
// Every workload gets a stable key (README.md, "Keys"). Problems come back as
// "file:line:col: error: ..." diagnostics, all of them, never as exceptions.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_BENCH_MODEL_WORKLOADS_H
#define LOOM_BENCH_MODEL_WORKLOADS_H

#include "bench/model/Cost.h"
#include "tools/spec/Spec.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loom::model {

enum class Family { MlaDecode, KdaPrefill, Decoder };

/// "mla_decode", "kda_prefill", "decoder" (as in the specs).
const char *familyName(Family family);

struct Workload {
  Family family = Family::MlaDecode;
  /// Stable key: "mla_decode/trace/<index>/<uuid>", "mla_decode/<tier>/<index>",
  /// "kda_prefill/<name>", "decoder/<model>/layers=<L>/batch=<B>/context=<C>".
  std::string key;
  /// "trace", the tier's name, "kda_prefill" or "decoder".
  std::string set;
  /// 0-based position: the trace line, the entry in its tier, the entry in
  /// kda_prefill.yaml / decoder.yaml.
  int64_t index = 0;
  /// Trace: the uuid; KDA: the name; decoder: the model; tiers: empty.
  std::string name;
  /// Where it is written (1-based line).
  std::string file;
  int line = 0;
  /// How the lengths were given: "list" or the generator string.
  std::string lengthsGiven = "list";
  /// MLA: kv_len per request; KDA: sequence lengths; decoder: `context` per
  /// request.
  std::vector<int64_t> lengths;
  // The shape of `family` (the others stay default).
  MlaShape mla;
  KdaShape kda;
  spec::DecoderSpec decoder;
  int64_t batch = 0;   ///< requests (MLA, decoder); sequences (KDA)
  int64_t context = 0; ///< decoder: KV tokens per request, new one included

  int64_t totalLength() const;
  Cost cost() const;
};

struct WorkloadSet {
  std::vector<Workload> workloads; ///< file order: trace, tiers, KDA, decoder
  std::vector<spec::Diagnostic> errors;
  bool ok() const { return errors.empty(); }
};

/// Reads every workload file in `workloadsDir` and the specs they need from
/// `configsDir`.
WorkloadSet loadWorkloads(const std::string &workloadsDir,
                          const std::string &configsDir);

} // namespace loom::model

#endif // LOOM_BENCH_MODEL_WORKLOADS_H
