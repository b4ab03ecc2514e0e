//===- DecoderOracle.h - fp64 reference of the decoder-layer ops ----------===//
//
// An independent reference for the decoder family: every layer op written as
// the plain loop its definition states (ir/LoomOps.td), and one decode step of
// a Llama/Qwen3 decoder layer composed from them in DESIGN.md's order. All
// math is in double. Inputs are the values the kernels see (bf16 weights and
// inputs, already rounded, passed as double).
//
// Two modes for the activations between ops (DecoderShape::storage):
//  * Exact (pure fp64): never rounded. The model's math with bf16 weights.
//  * storage-faithful (BF16/F16/F32): each op is still computed in double
//    from its (stored) inputs, and its result is rounded to the element type
//    of the buffer the graph stores it in, exactly where
//    tools/frontend/BuildGraph.cpp buildDecoder stores it (every
//    intermediate, the residual stream, the K/V cache appends; logits are
//    f32). This is the reference of the computation the spec specifies:
//    bf16 buffers between ops are part of it. A correct program differs
//    from it only where its fp32 value and the double fall on either side
//    of a rounding boundary (one ulp there): bit-identical on small shapes,
//    ~10x closer than pure fp64 on the first layer of an 8B model. Those
//    flips spread through the next linear, though, so after a layer or two
//    the error grows like the pure fp64 one (~1e-3 per layer on random
//    stacks): tools/check/README.md has the measurements, and
//    tools/check/DecoderCheck.cpp checks deep stacks a layer pair at a time.
//
// Shares no code and no tiling with kernels/host/DecoderBodies.h: no splits,
// no online softmax, no tiles. linear and gqaDecode spread independent
// outputs over threads (Parallel.h); every output is one thread's plain
// loop in the definition's order, so results do not depend on the thread
// count.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_ORACLE_DECODERORACLE_H
#define LOOM_TOOLS_ORACLE_DECODERORACLE_H

#include "tools/oracle/Storage.h"

#include <cstdint>
#include <vector>

namespace loom {
namespace oracle {

using Vec = std::vector<double>;
using IVec = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Op-level references
//===----------------------------------------------------------------------===//

/// x: [R, D] rows; y[r, i] = x[r, i] / sqrt(mean(x[r]^2) + eps) * w[i].
Vec rmsnorm(const Vec &x, const Vec &w, int64_t D, double eps);

/// x: [M, K], w: [N, K]; y = x w^T (+ residual [M, N] when non-null).
Vec linear(const Vec &x, const Vec &w, int64_t M, int64_t K, int64_t N,
           const Vec *residual = nullptr);

/// Llama 3.1's RoPE frequency scaling (HF rope_type "llama3"); factor 0:
/// none.
struct RopeScaling {
  double factor = 0, lowFreqFactor = 1, highFreqFactor = 4;
  double originalMaxPosition = 8192;
};

/// x: [T, H, D], positions: [T]; NeoX-halves rotation of the first
/// rotaryDim dims by positions[t] * theta^(-2i/rotaryDim) (that frequency
/// scaled as `scaling` says), rest copied.
Vec rope(const Vec &x, const IVec &positions, int64_t H, int64_t D,
         int64_t rotaryDim, double theta, const RopeScaling &scaling = {});

/// k: [T, Hkv, D], v: [T, Hkv, Dv] written to page slot/P, slot slot%P of
/// the [pages, P, Hkv, D|Dv] caches; negative slots are skipped.
void kvAppend(const Vec &k, const Vec &v, const IVec &slotMapping, int64_t Hkv,
              int64_t D, int64_t Dv, int64_t P, Vec &kCache, Vec &vCache);

/// The paged page table of gqa_decode: request b owns page ids
/// indices[indptr[b] .. indptr[b+1]) and holds lens[b] tokens.
struct PageTable {
  IVec indptr, indices, lens;
};

/// q: [B, Hq, D]; caches [pages, P, Hkv, D|Dv]; returns o: [B, Hq, Dv],
/// o[b, h] = softmax(smScale * q[b, h] . K^T) V over request b's tokens,
/// query head h reading KV head h / (Hq / Hkv). An empty request gives 0.
/// Throws std::invalid_argument when a request's pages cannot hold its tokens.
Vec gqaDecode(const Vec &q, const Vec &kCache, const Vec &vCache,
              const PageTable &table, int64_t B, int64_t Hq, int64_t Hkv,
              int64_t D, int64_t Dv, int64_t P, double smScale);

/// Elementwise gate / (1 + exp(-gate)) * up.
Vec siluMul(const Vec &gate, const Vec &up);

/// Elementwise a + b.
Vec add(const Vec &a, const Vec &b);

/// table: [vocab, D]; y[b] = table[ids[b]]. Throws std::out_of_range on a
/// bad id.
Vec embedding(const Vec &table, const IVec &ids, int64_t D);

/// x: [B, V]; lowest index of the maximum per row, a NaN counting as the
/// largest value.
IVec argmax(const Vec &x, int64_t V);

//===----------------------------------------------------------------------===//
// Decoder layer, stack and head
//===----------------------------------------------------------------------===//

/// Shapes and constants of a decoder stack (configs/decoder/*.yaml).
struct DecoderShape {
  int64_t hidden = 0, qHeads = 0, kvHeads = 0, headDim = 0, ffn = 0;
  int64_t pageSize = 0;
  double rmsEps = 1e-5, ropeTheta = 10000.0;
  RopeScaling ropeScaling;
  bool qkNorm = false; // Qwen3: per-head RMSNorm on q and k before RoPE
  /// Exact: pure fp64. Otherwise the activation buffers' element type:
  /// every op's result is rounded to it where the graph stores it.
  Storage storage = Storage::Exact;
};

/// One layer's weights, row-major as the graph stores them
/// (w_q [Hq*hd, hidden], w_o [hidden, Hq*hd], w_down [hidden, ffn], ...).
/// qNorm/kNorm ([headDim]) are read only when the shape has qkNorm.
struct LayerWeights {
  Vec attnNorm, wq, wk, wv, wo, qNorm, kNorm, ffnNorm, wGate, wUp, wDown;
};

/// One layer's paged caches, [pages, P, Hkv, headDim] each.
struct LayerCache {
  Vec k, v;
};

/// Runtime inputs of a decode step with `batch` requests, one new token
/// each: its position, the cache slot it is written to, and the page table
/// that already counts it (lens include the new token).
struct StepMeta {
  int64_t batch = 0;
  IVec positions, slotMapping;
  PageTable table;
};

/// One decoder layer on x [batch, hidden]; appends this step's K and V to
/// `cache` and returns the layer's output [batch, hidden].
Vec decoderLayer(const DecoderShape &shape, const LayerWeights &w, const Vec &x,
                 const StepMeta &meta, LayerCache &cache);

/// Only the part of decoderLayer that writes the cache: appends this step's
/// K and V (from x) to `cache`, bit-identical to what decoderLayer appends.
/// Reads attnNorm, wk, wv (and kNorm). For a layer whose residual branches
/// are known to add nothing (zero w_o and w_down), whose output is x.
void decoderLayerKv(const DecoderShape &shape, const LayerWeights &w,
                    const Vec &x, const StepMeta &meta, LayerCache &cache);

/// Layers 0..L-1 in order; caches[l] is layer l's cache.
Vec decoderStack(const DecoderShape &shape,
                 const std::vector<LayerWeights> &layers, const Vec &x,
                 const StepMeta &meta, std::vector<LayerCache> &caches);

/// Weights of the `head: true` variant: embedding table [vocab, hidden],
/// final norm [hidden], LM head [vocab, hidden].
struct HeadWeights {
  int64_t vocab = 0;
  Vec embed, finalNorm, lmHead;
};

struct HeadResult {
  Vec hidden; // after the last layer, before the final norm
  Vec logits; // [batch, vocab]
  IVec tokens;
};

/// embedding -> decoderStack -> final RMSNorm -> LM head -> argmax. In
/// storage-faithful mode the normed hidden is rounded to the activation
/// type and the logits to f32 (BuildGraph's logits buffer).
HeadResult decoderWithHead(const DecoderShape &shape,
                           const std::vector<LayerWeights> &layers,
                           const HeadWeights &head, const IVec &tokenIds,
                           const StepMeta &meta,
                           std::vector<LayerCache> &caches);

} // namespace oracle
} // namespace loom

#endif // LOOM_TOOLS_ORACLE_DECODERORACLE_H
