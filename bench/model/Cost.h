//===- Cost.h - Bytes moved once and FLOPs of one workload ------*- C++ -*-===//
//
// The model's arithmetic, one function per family. Bytes are the least a
// kernel must move between HBM and the chip: every input, weight and cache
// row it needs read once, every output written once, at the dtypes and
// layouts of tools/frontend/BuildGraph.cpp. FLOPs are the matrix work (what
// the chip table's dense bf16 rate measures); elementwise work (softmax,
// exp, norms, RoPE, gates) is not counted. README.md gives every formula.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_BENCH_MODEL_COST_H
#define LOOM_BENCH_MODEL_COST_H

#include "targets/chips/ChipTable.h"
#include "tools/spec/Spec.h"

#include <cstdint>
#include <vector>

namespace loom::model {

/// Bytes by what they are. Every field exists for every family (0 where it
/// does not apply), so the JSON schema is one shape.
struct Bytes {
  int64_t kvRead = 0;     ///< KV cache rows read (MLA: ckv + kpe)
  int64_t kvWrite = 0;    ///< KV cache rows written (decoder: the new token)
  int64_t weights = 0;    ///< weights (decoder layers; KDA a_log, dt_bias)
  int64_t inputs = 0;     ///< activations in (q, k, v, g, beta, hidden)
  int64_t outputs = 0;    ///< activations out (o, lse, hidden_out)
  int64_t stateRead = 0;  ///< KDA initial state (fp32)
  int64_t stateWrite = 0; ///< KDA final state (fp32)
  int64_t meta = 0;       ///< int32 page tables, lengths, positions
  int64_t total() const {
    return kvRead + kvWrite + weights + inputs + outputs + stateRead +
           stateWrite + meta;
  }
};

struct Cost {
  Bytes bytes;
  int64_t flops = 0;
};

/// MLA paged decode (absorbed) over `kvLens` (one per request).
struct MlaShape {
  int64_t numHeads = 0;
  int64_t headDimCkv = 0;
  int64_t headDimKpe = 0;
  int64_t pageSize = 0;
  spec::DType dtype = spec::DType::BF16;
};
Cost mlaDecodeCost(const MlaShape &shape, const std::vector<int64_t> &kvLens);

/// KDA prefill (chunked) over packed sequences of `seqLens` tokens.
struct KdaShape {
  int64_t numHeads = 0;
  int64_t headDimK = 0;
  int64_t headDimV = 0;
  int64_t chunkSize = 0;
  bool initialState = false;
  spec::DType dtype = spec::DType::BF16;
};
Cost kdaPrefillCost(const KdaShape &shape, const std::vector<int64_t> &seqLens);

/// Matrix FLOPs of one chunk of `c` tokens of one head (README.md: the terms
/// of the WY/UT chunked form).
int64_t kdaChunkFlops(int64_t c, int64_t dk, int64_t dv);

/// One decode step of `shape.layers` decoder layers for `batch` requests
/// whose KV holds `context` tokens each (the new one included).
Cost decoderCost(const spec::DecoderSpec &shape, int64_t batch,
                 int64_t context);

/// Bytes of one element.
int64_t dtypeBytes(spec::DType dtype);

/// max(bytes / HBM bandwidth, FLOPs / dense bf16 peak) on one chip.
struct Roofline {
  double memoryUs = 0;  ///< bytes / hbmGBps
  double computeUs = 0; ///< flops / bf16Tflops
  double timeUs = 0;    ///< the larger of the two
  bool computeBound = false; ///< computeUs > memoryUs
};
Roofline roofline(const Cost &cost, const ChipInfo &chip);

} // namespace loom::model

#endif // LOOM_BENCH_MODEL_COST_H
