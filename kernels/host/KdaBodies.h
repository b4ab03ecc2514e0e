//===- KdaBodies.h - Host task bodies for KDA prefill -----------*- C++ -*-===//
//
// Kimi Delta Attention prefill (chunked gated delta rule) over packed
// variable-length sequences, cut into two phases:
//
//  * Phase 0 ("intra-chunk"), parallel. Sequence n owns ceil(len_n / C)
//    chunks of C tokens (the last may be partial; a length-0 sequence owns
//    none), numbered globally in sequence order. A task gets a range
//    [c0, c1) of global chunk indices and one head h; indices at or past the
//    run-time chunk count are skipped. Per (chunk, head) it computes all that
//    does not depend on the recurrent state and writes it to that pair's
//    workspace slot.
//  * Phase 1 ("state scan"), serial along each sequence. A task gets one
//    sequence slot n (skipped when n >= the run-time N), one head h and a
//    column range [v0, v1) of V. It walks the chunks of sequence n in order,
//    carrying the state columns S[:, v0:v1] from initial_state (or zero), and
//    writes o for those columns and final_state[n, h, :, v0:v1].
//
// The algebra. Within a chunk (rows i = 0..L-1, S0 the state entering it),
// let G_i = sum_{j<=i} g_j (per key channel, non-increasing in i). Unrolling
// the recurrence S_i = diag(e^{g_i}) S_{i-1} + k_i d_i^T, with
// d_i = beta_i (v_i - (diag(e^{g_i}) S_{i-1})^T k_i), gives
//   S_i = diag(e^{G_i}) S0 + sum_{j<=i} diag(e^{G_i - G_j}) k_j d_j^T
// and so, with M_ij = sum_c k_i[c] k_j[c] e^{G_i[c] - G_j[c]} (j < i):
//   (I + StrictLower(diag(beta) M)) D = diag(beta) V - diag(beta)(K.e^G) S0
//   D = u - w S0,  u = A diag(beta) V,  w = A diag(beta) (K.e^G)
//   o = (scale Q.e^G) S0 + Aqk D,  Aqk_ij = scale sum_c q_i k_j e^{G_i-G_j}
//   S_L = diag(e^{G_last}) S0 + (K.e^{G_last - G})^T D
// where A = (I + StrictLower(diag(beta) M))^{-1}. Every exponent above is
// G_later - G_earlier <= 0, so nothing overflows however negative the gate
// is; a factorised form (K.e^G)(K.e^{-G})^T would overflow e^{-G} for strong
// decays over 64 tokens. That is why M and Aqk are built per pair here.
// A is never formed: w and u come from forward substitution.
//
// Bodies math in fp32, read activations of type T through load(), round only
// when storing o. They allocate nothing (fixed stack scratch bounded by
// kKdaMaxChunk and kKdaVSub; everything K-sized lives in the workspace slot
// or the output state) and tasks of one phase write disjoint memory, so they
// may run concurrently on different threads.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_HOST_KDABODIES_H
#define LOOM_KERNELS_HOST_KDABODIES_H

#include "kernels/common/BodyLimits.h"
#include "kernels/common/KdaChunks.h"
#include "kernels/common/Numerics.h"
#include "kernels/host/MetaFault.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>

namespace loom {
namespace host {

/// Largest chunk size the fixed stack scratch allows (kernels/common/
/// BodyLimits.h, which loomc checks every spec and op against).
using ::loom::kKdaMaxChunk;
/// Phase 1 processes its V range in sub-blocks of this many columns so its
/// per-chunk scratch (C x kKdaVSub floats) has a fixed size whatever V is.
constexpr int64_t kKdaVSub = 64;
/// The epsilon inside the L2 norm: x / sqrt(sum x^2 + eps).
constexpr float kKdaNormEps = 1e-6f;

/// Gate parameterisation; values match the IR's #loom.gate enum.
enum class KdaGate : int32_t { Unbounded = 0, Bounded = 1 };

/// Operands of one kda_prefill op, already offset to their buffer bases.
/// Layouts (row-major): q, k, g [T,H,K]; v, o [T,H,V]; beta [T,H];
/// aLog [H]; dtBias [H,K]; cuSeqlens [N+1]; initialState, finalState
/// [N,H,K,V] fp32. `g` and `beta` are the raw (pre-activation) inputs.
/// `numSeqs` (N) and `numTokens` (T) are the run-time counts. Token rows are
/// absolute (row t of every [T, ...] buffer is token t); only rows in
/// [cuSeqlens[0], cuSeqlens[N]) are read or written, and cuSeqlens[N] <= T.
/// initialState may be null (zeros) and may alias finalState (each phase-1 task
/// reads its own block before writing it). cuSeqlens and the run-time chunk
/// count are checked by the emitted tile functions (kdaCheckedChunks) before
/// a body runs; chunkSize in [1, kKdaMaxChunk] by loomc.
template <typename T> struct KdaParams {
  const T *q = nullptr;
  const T *k = nullptr;
  const T *v = nullptr;
  const T *g = nullptr;    ///< raw gate
  const T *beta = nullptr; ///< raw beta (sigmoid is applied here)
  const float *aLog = nullptr;
  const float *dtBias = nullptr;
  const int32_t *cuSeqlens = nullptr;
  const float *initialState = nullptr; ///< optional
  T *o = nullptr;
  float *finalState = nullptr;
  int64_t numTokens = 0;  ///< run-time T
  int64_t numSeqs = 0;    ///< run-time N
  int64_t numHeads = 0;   ///< H
  int64_t dimK = 0;       ///< K
  int64_t dimV = 0;       ///< V
  int64_t chunkSize = 64; ///< C
  KdaGate gate = KdaGate::Unbounded;
  float lowerBound = -5.f; ///< bounded gate only, in [-5, 0)
  float scale = 0.f;       ///< usually K^-0.5
  bool qkL2norm = true;
  int64_t maxChunks = 0; ///< workspace slots per head (kdaMaxChunks)
};

//===----------------------------------------------------------------------===//
// Chunk list and workspace
//===----------------------------------------------------------------------===//

/// The chunk list and workspace layout: kernels/common/KdaChunks.h.
using namespace ::loom::kda;
using KdaSlot = KdaSlotT<float>;

//===----------------------------------------------------------------------===//
// Phase 0: intra-chunk
//===----------------------------------------------------------------------===//

namespace kda_detail {

inline float softplus(float x) {
  // log(1 + e^x) without overflow: for large x it is x to fp32 precision.
  return x > 20.f ? x : std::log1p(std::exp(x));
}

inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

/// Per-channel log decay of one token.
inline float gate(KdaGate mode, float aLog, float lowerBound, float x) {
  float a = std::exp(aLog);
  if (mode == KdaGate::Bounded)
    return lowerBound * sigmoid(a * x);
  return -a * softplus(x);
}

/// dst[0..n) = src row as fp32, divided by its L2 norm when asked.
template <typename T>
inline void loadRow(const T *src, int64_t n, bool l2norm, float *dst) {
  float sumSq = 0.f;
  for (int64_t c = 0; c < n; ++c) {
    dst[c] = load(src, c);
    sumSq += dst[c] * dst[c];
  }
  if (!l2norm)
    return;
  float inv = 1.f / std::sqrt(sumSq + kKdaNormEps);
  for (int64_t c = 0; c < n; ++c)
    dst[c] *= inv;
}

/// Phase 0 for one (chunk, head). Uses the slot's regions as scratch before
/// they receive their final values: w first holds G, qg holds the normalised
/// q, kd the normalised k, eg the raw G_last.
template <typename T>
void intraChunkOne(const KdaParams<T> &p, const KdaChunk &ch, int64_t h,
                   const KdaSlot &s) {
  const int64_t H = p.numHeads, K = p.dimK, V = p.dimV, C = p.chunkSize;
  const int64_t L = ch.len;
  float beta[kKdaMaxChunk];
  // Strict lower triangle of diag(beta) M, row-major [C][C].
  float lm[kKdaMaxChunk * kKdaMaxChunk];

  // Normalised q, k; beta; inclusive prefix sum of the gate (in w).
  const float *dtBias = p.dtBias + h * K;
  const float aLog = p.aLog[h];
  for (int64_t i = 0; i < L; ++i) {
    const int64_t row = (ch.start + i) * H + h;
    loadRow(p.q + row * K, K, p.qkL2norm, s.qg + i * K);
    loadRow(p.k + row * K, K, p.qkL2norm, s.kd + i * K);
    beta[i] = sigmoid(load(p.beta, row));
    float *gi = s.w + i * K;
    for (int64_t c = 0; c < K; ++c) {
      float x = load(p.g, row * K + c) + dtBias[c];
      gi[c] = gate(p.gate, aLog, p.lowerBound, x);
    }
    if (i > 0) {
      const float *prev = gi - K;
      for (int64_t c = 0; c < K; ++c)
        gi[c] += prev[c];
    }
  }

  // Per pair j <= i: e^{G_i - G_j} <= 1, shared by M (k_i, k_j) and Aqk
  // (q_i, k_j).
  for (int64_t i = 0; i < L; ++i) {
    const float *gi = s.w + i * K, *qi = s.qg + i * K, *ki = s.kd + i * K;
    for (int64_t j = 0; j < i; ++j) {
      const float *gj = s.w + j * K, *kj = s.kd + j * K;
      float sumK = 0.f, sumQ = 0.f;
      for (int64_t c = 0; c < K; ++c) {
        float kf = kj[c] * std::exp(gi[c] - gj[c]);
        sumK += ki[c] * kf;
        sumQ += qi[c] * kf;
      }
      lm[i * C + j] = beta[i] * sumK;
      s.aqk[i * C + j] = p.scale * sumQ;
    }
    float diag = 0.f;
    for (int64_t c = 0; c < K; ++c)
      diag += qi[c] * ki[c];
    s.aqk[i * C + i] = p.scale * diag;
    for (int64_t j = i + 1; j < C; ++j)
      s.aqk[i * C + j] = 0.f;
  }
  for (int64_t i = L; i < C; ++i)
    for (int64_t j = 0; j < C; ++j)
      s.aqk[i * C + j] = 0.f;

  // Row by row, turn G into its decayed operands: qg = scale q e^G,
  // w = beta k e^G (right-hand side of the substitution), kd = k e^{Gl - G}.
  const float *gLastRow = s.w + (L - 1) * K;
  for (int64_t c = 0; c < K; ++c)
    s.eg[c] = gLastRow[c];
  for (int64_t i = 0; i < L; ++i) {
    float *wi = s.w + i * K, *qi = s.qg + i * K, *ki = s.kd + i * K;
    for (int64_t c = 0; c < K; ++c) {
      float gi = wi[c];
      float e = std::exp(gi);
      qi[c] *= p.scale * e;
      wi[c] = beta[i] * ki[c] * e;
      ki[c] *= std::exp(s.eg[c] - gi);
    }
  }
  for (int64_t c = 0; c < K; ++c)
    s.eg[c] = std::exp(s.eg[c]);

  // Forward substitution (I + lm) w = rhs, (I + lm) u = diag(beta) V.
  for (int64_t i = 0; i < L; ++i) {
    float *wi = s.w + i * K, *ui = s.u + i * V;
    const int64_t row = (ch.start + i) * H + h;
    for (int64_t c = 0; c < V; ++c)
      ui[c] = beta[i] * load(p.v, row * V + c);
    for (int64_t m = 0; m < i; ++m) {
      const float l = lm[i * C + m];
      const float *wm = s.w + m * K, *um = s.u + m * V;
      for (int64_t c = 0; c < K; ++c)
        wi[c] -= l * wm[c];
      for (int64_t c = 0; c < V; ++c)
        ui[c] -= l * um[c];
    }
  }

  // Rows past a partial chunk's end: zero, so a full-tile reader is exact.
  for (int64_t i = L; i < C; ++i) {
    std::fill(s.w + i * K, s.w + (i + 1) * K, 0.f);
    std::fill(s.qg + i * K, s.qg + (i + 1) * K, 0.f);
    std::fill(s.kd + i * K, s.kd + (i + 1) * K, 0.f);
    std::fill(s.u + i * V, s.u + (i + 1) * V, 0.f);
  }
}

} // namespace kda_detail

/// Phase 0 task: global chunks [c0, c1) of head h. Writes only the slots
/// (c, h) for c in [c0, c1) below the run-time chunk count.
template <typename T>
void kdaIntraChunk(const KdaParams<T> &p, int64_t c0, int64_t c1, int64_t h,
                   float *workspace) {
  const int64_t C = p.chunkSize;
  assert(C >= 1 && C <= kKdaMaxChunk);
  assert(p.cuSeqlens[p.numSeqs] <= p.numTokens);
  c1 = std::min(c1, p.maxChunks);
  KdaChunk ch;
  for (int64_t c = c0; c < c1; ++c) {
    if (!kdaLocateChunk(p.cuSeqlens, p.numSeqs, C, c, ch))
      return; // chunk indices only grow: the rest are past the count too
    KdaSlot s = kdaSlot(workspace, c, h, p.numHeads, C, p.dimK, p.dimV);
    kda_detail::intraChunkOne(p, ch, h, s);
  }
}

//===----------------------------------------------------------------------===//
// Phase 1: state scan
//===----------------------------------------------------------------------===//

/// Phase 1 task: sequence n, head h, state/output columns [v0, v1). The
/// running state lives in final_state[n, h, :, v0:v1] itself, which this
/// task alone owns; V columns are independent, so it scans the sequence once
/// per sub-block of kKdaVSub columns.
template <typename T>
void kdaStateScan(const KdaParams<T> &p, int64_t n, int64_t h, int64_t v0,
                  int64_t v1, const float *workspace) {
  if (n >= p.numSeqs)
    return;
  const int64_t H = p.numHeads, K = p.dimK, V = p.dimV, C = p.chunkSize;
  assert(C >= 1 && C <= kKdaMaxChunk);
  assert(p.cuSeqlens[p.numSeqs] <= p.numTokens);
  const int64_t seqStart = p.cuSeqlens[n];
  const int64_t len = int64_t(p.cuSeqlens[n + 1]) - seqStart;
  const int64_t firstChunk = kdaFirstChunkOfSeq(p.cuSeqlens, n, C);
  const int64_t numChunks = kdaCeilDiv(len, C);
  assert(firstChunk + numChunks <= p.maxChunks);
  float *state = p.finalState + (n * H + h) * K * V;
  const float *init =
      p.initialState ? p.initialState + (n * H + h) * K * V : nullptr;

  float vnew[kKdaMaxChunk * kKdaVSub];
  float acc[kKdaVSub];
  for (int64_t vs = v0; vs < v1; vs += kKdaVSub) {
    const int64_t nv = std::min(kKdaVSub, v1 - vs);
    for (int64_t c = 0; c < K; ++c)
      for (int64_t j = 0; j < nv; ++j)
        state[c * V + vs + j] = init ? init[c * V + vs + j] : 0.f;

    for (int64_t ci = 0; ci < numChunks; ++ci) {
      const int64_t L = std::min(C, len - ci * C);
      const int64_t t0 = seqStart + ci * C;
      KdaSlotT<const float> s =
          kdaSlot(workspace, firstChunk + ci, h, H, C, K, V);

      // v_new = u - w S, from the state entering the chunk.
      for (int64_t i = 0; i < L; ++i) {
        float *vi = vnew + i * kKdaVSub;
        for (int64_t j = 0; j < nv; ++j)
          vi[j] = s.u[i * V + vs + j];
        for (int64_t c = 0; c < K; ++c) {
          const float wic = s.w[i * K + c];
          const float *sc = state + c * V + vs;
          for (int64_t j = 0; j < nv; ++j)
            vi[j] -= wic * sc[j];
        }
      }
      // o = qg S + Aqk v_new.
      for (int64_t i = 0; i < L; ++i) {
        for (int64_t j = 0; j < nv; ++j)
          acc[j] = 0.f;
        for (int64_t c = 0; c < K; ++c) {
          const float qic = s.qg[i * K + c];
          const float *sc = state + c * V + vs;
          for (int64_t j = 0; j < nv; ++j)
            acc[j] += qic * sc[j];
        }
        for (int64_t m = 0; m <= i; ++m) {
          const float a = s.aqk[i * C + m];
          const float *vm = vnew + m * kKdaVSub;
          for (int64_t j = 0; j < nv; ++j)
            acc[j] += a * vm[j];
        }
        T *orow = p.o + ((t0 + i) * H + h) * V + vs;
        for (int64_t j = 0; j < nv; ++j)
          store(orow, j, acc[j]);
      }
      // S = diag(e^{G_last}) S + kd^T v_new.
      for (int64_t c = 0; c < K; ++c) {
        float *sc = state + c * V + vs;
        const float e = s.eg[c];
        for (int64_t j = 0; j < nv; ++j)
          sc[j] *= e;
        for (int64_t i = 0; i < L; ++i) {
          const float kd = s.kd[i * K + c];
          const float *vi = vnew + i * kKdaVSub;
          for (int64_t j = 0; j < nv; ++j)
            sc[j] += kd * vi[j];
        }
      }
    }
  }
}

} // namespace host
} // namespace loom

#endif // LOOM_KERNELS_HOST_KDABODIES_H
