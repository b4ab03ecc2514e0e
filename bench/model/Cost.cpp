//===- Cost.cpp - Bytes and FLOPs per family ------------------------------===//
//
// Buffer names below are the graph arguments of tools/frontend/BuildGraph.cpp.
// Only what HBM must see is counted: workspace intermediates (decoder
// activations between ops, KDA chunk states) are small enough to live in L2
// and are left out, as README.md says.
//
//===----------------------------------------------------------------------===//
#include "bench/model/Cost.h"

#include <algorithm>

namespace loom::model {
namespace {

constexpr int64_t kI32 = 4; // meta buffers
constexpr int64_t kF32 = 4; // lse, KDA state and gate weights

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

int64_t dtypeBytes(spec::DType dtype) {
  switch (dtype) {
  case spec::DType::BF16:
  case spec::DType::F16:
    return 2;
  case spec::DType::F32:
    return 4;
  }
  return 0;
}

Cost mlaDecodeCost(const MlaShape &s, const std::vector<int64_t> &kvLens) {
  const int64_t e = dtypeBytes(s.dtype);
  const int64_t B = int64_t(kvLens.size());
  const int64_t H = s.numHeads, dc = s.headDimCkv, dp = s.headDimKpe;
  int64_t tokens = 0, pages = 0;
  for (int64_t len : kvLens) {
    tokens += len;
    pages += ceilDiv(len, s.pageSize);
  }
  Cost c;
  // The latent cache is shared by all heads: each valid token's ckv and kpe
  // rows are read once per request. The unused tail of a partial last page
  // is never needed, so it is not counted.
  c.bytes.kvRead = tokens * (dc + dp) * e;
  c.bytes.inputs = B * H * (dc + dp) * e;          // q_nope, q_pe
  c.bytes.outputs = B * H * dc * e + B * H * kF32; // o, lse
  // kv_indptr [B+1], kv_indices (one per page), kv_lens [B]
  c.bytes.meta = (B + 1) * kI32 + pages * kI32 + B * kI32;
  // Per head and token: q.Kc + q_pe.Kp (2 (dc + dp)), then p.Kc (2 dc).
  c.flops = tokens * H * (2 * (dc + dp) + 2 * dc);
  return c;
}

int64_t kdaChunkFlops(int64_t c, int64_t dk, int64_t dv) {
  return 2 * c * c * dk      // A_kk = (k e^g)(k e^-g)^T
         + 2 * c * c * dk    // A_qk = (q e^g)(k e^-g)^T
         + c * c * c / 3     // (I + A_kk)^-1, triangular
         + 2 * c * c * dk    // w = T (beta k e^g)
         + 2 * c * c * dv    // u = T (beta v)
         + 2 * c * dk * dv   // v_new = u - w S
         + 2 * c * dk * dv   // o = (q e^g) S ...
         + 2 * c * c * dv    //     ... + A_qk v_new
         + 2 * c * dk * dv;  // S = e^g_last S + (k e^(g_last - g))^T v_new
}

Cost kdaPrefillCost(const KdaShape &s, const std::vector<int64_t> &seqLens) {
  const int64_t e = dtypeBytes(s.dtype);
  const int64_t N = int64_t(seqLens.size());
  const int64_t H = s.numHeads, dk = s.headDimK, dv = s.headDimV;
  int64_t T = 0, flopsPerHead = 0;
  for (int64_t len : seqLens) {
    T += len;
    for (int64_t start = 0; start < len; start += s.chunkSize)
      flopsPerHead += kdaChunkFlops(std::min(s.chunkSize, len - start), dk, dv);
  }
  Cost c;
  // q, k, g [T, H, dk]; v [T, H, dv]; beta [T, H]. Both gates read the same
  // tensors (the bounded one only adds a scalar attribute).
  c.bytes.inputs = T * H * (3 * dk + dv + 1) * e;
  c.bytes.weights = H * kF32 + H * dk * kF32;       // a_log [H], dt_bias [H, dk]
  c.bytes.meta = (N + 1) * kI32;                    // cu_seqlens
  c.bytes.outputs = T * H * dv * e;                 // o
  const int64_t state = N * H * dk * dv * kF32;     // [N, H, dk, dv] fp32
  c.bytes.stateRead = s.initialState ? state : 0;
  c.bytes.stateWrite = state;                       // final_state
  c.flops = H * flopsPerHead;
  return c;
}

Cost decoderCost(const spec::DecoderSpec &d, int64_t batch, int64_t context) {
  const int64_t e = dtypeBytes(d.dtype);
  const int64_t L = d.layers, B = batch, hid = d.hidden, hq = d.numQHeads,
                hkv = d.numKvHeads, hd = d.headDim, ffn = d.ffn;
  // The four attention projections and the three MLP ones: every element is
  // one multiply-add per request.
  const int64_t linear = hq * hd * hid + 2 * hkv * hd * hid + hid * hq * hd +
                         3 * ffn * hid;
  // attn_norm, ffn_norm (and q_norm, k_norm with qk_norm).
  const int64_t norms = 2 * hid + (d.qkNorm ? 2 * hd : 0);
  const int64_t kvRow = hkv * hd * e * 2; // one token's K and V in one layer

  Cost c;
  c.bytes.weights = L * (linear + norms) * e;
  c.bytes.kvRead = L * B * context * kvRow;
  c.bytes.kvWrite = L * B * kvRow;
  // positions, slot_mapping, kv_indptr, kv_indices, kv_lens: read once.
  c.bytes.meta = B * kI32 * 2 + (B + 1) * kI32 +
                 B * ceilDiv(context, d.pageSize) * kI32 + B * kI32;
  // QK^T and PV over the context for every query head.
  c.flops = L * (2 * B * linear + 4 * B * hq * hd * context);
  if (d.head) {
    // token_ids in, one embedding row per request, final norm, LM head,
    // argmax out.
    c.bytes.inputs = B * kI32;
    c.bytes.weights += B * hid * e + hid * e + d.vocab * hid * e;
    c.bytes.outputs = B * kI32;
    c.flops += 2 * B * d.vocab * hid;
  } else {
    c.bytes.inputs = B * hid * e;  // hidden
    c.bytes.outputs = B * hid * e; // hidden_out
  }
  return c;
}

Roofline roofline(const Cost &cost, const ChipInfo &chip) {
  Roofline r;
  // GB/s = 1e3 bytes per microsecond; TFLOP/s = 1e6 FLOPs per microsecond.
  r.memoryUs = double(cost.bytes.total()) / (double(chip.hbmGBps) * 1e3);
  r.computeUs = double(cost.flops) / (double(chip.bf16Tflops) * 1e6);
  r.computeBound = r.computeUs > r.memoryUs;
  r.timeUs = std::max(r.memoryUs, r.computeUs);
  return r;
}

} // namespace loom::model
