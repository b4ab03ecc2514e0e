//===- KdaChunks.h - KDA's chunk list and workspace layout -------*- C++ -*-===//
//
// One copy of the KDA chunk arithmetic and workspace layout for the host,
// CUDA and HIP bodies: chunk c of a varlen batch is the c-th run of C tokens
// over the sequences in order (a sequence's last chunk may be short), and
// the intra-chunk phase leaves per (chunk, head) one workspace slot that the
// state scan reads.
//
// On the device the counts use 32-bit arithmetic (token counts and C fit):
// a 64-bit division is a long software routine there, whose temporaries
// crowd the registers of the bodies that call these in uniform loops.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_KDACHUNKS_H
#define LOOM_KERNELS_COMMON_KDACHUNKS_H

#include "kernels/common/HostDevice.h"
#include "kernels/common/MetaGuard.h"

#include <cstdint>

// In their own namespace: each target's bodies take them in with one
// using-directive, so loom::host::kdaNumChunks, loom::sm90::... and
// loom::gfx950::... (what emitted code and tests call) all name these.
namespace loom {
namespace kda {

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define LOOM_KDA_COUNT int32_t
#else
#define LOOM_KDA_COUNT int64_t
#endif

/// Upper bound on the global chunk count: sum ceil(len_n / C) <=
/// sum floor(len_n / C) + N <= maxTokens / C + maxSeqs.
LOOM_HOST_DEVICE inline int64_t kdaMaxChunks(int64_t maxTokens,
                                             int64_t maxSeqs, int64_t C) {
  return maxTokens / C + maxSeqs;
}

LOOM_HOST_DEVICE inline int64_t kdaCeilDiv(int64_t a, int64_t b) {
  using I = LOOM_KDA_COUNT;
  return (I(a) + I(b) - 1) / I(b);
}

/// Run-time number of chunks over all N sequences.
LOOM_HOST_DEVICE inline int64_t kdaNumChunks(const int32_t *cu, int64_t N,
                                             int64_t C) {
  using I = LOOM_KDA_COUNT;
  const I c = I(C);
  I total = 0;
  for (I n = 0; n < I(N); ++n)
    total += (I(cu[n + 1]) - I(cu[n]) + c - 1) / c;
  return total;
}

/// kdaNumChunks after checking cu_seqlens (MetaGuard.h): 0 <= cu[0], each
/// entry at least the one before, cu[N] <= `numTokens`, and at most
/// `maxChunks` chunks (the workspace's). -1 when refused: the caller then
/// reads no token.
LOOM_HOST_DEVICE inline int64_t kdaCheckedChunks(const int32_t *cu, int64_t N,
                                                 int64_t C, int64_t numTokens,
                                                 int64_t maxChunks) {
  if (!kCheckMeta)
    return kdaNumChunks(cu, N, C);
  if (cu[0] < 0) {
    recordMetaFault(cu, cu[0], LOOM_META_CU_SEQLENS);
    return -1;
  }
  int64_t total = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t len = int64_t(cu[n + 1]) - cu[n];
    if (len < 0 || cu[n + 1] > numTokens) {
      recordMetaFault(cu + n + 1, cu[n + 1], LOOM_META_CU_SEQLENS);
      return -1;
    }
    total += kdaCeilDiv(len, C);
  }
  if (total > maxChunks) {
    recordMetaFault(cu + N, cu[N], LOOM_META_CHUNKS);
    return -1;
  }
  return total;
}

/// Global index of sequence n's first chunk: sum_{n' < n} ceil(len_n' / C).
LOOM_HOST_DEVICE inline int64_t kdaFirstChunkOfSeq(const int32_t *cu,
                                                   int64_t n, int64_t C) {
  return kdaNumChunks(cu, n, C);
}

/// Where one chunk lies: its sequence, first token (absolute row in the
/// packed [T, ...] buffers) and valid length (1..C).
struct KdaChunk {
  int64_t seq = 0;
  int64_t start = 0;
  int64_t len = 0;
};

/// Maps a global chunk index to its sequence and token range by a scan over
/// the sequences (N is small: max_seqs is tens). False when the index is at
/// or past the run-time chunk count.
LOOM_HOST_DEVICE inline bool kdaLocateChunk(const int32_t *cu, int64_t N,
                                            int64_t C, int64_t chunk,
                                            KdaChunk &out) {
  using I = LOOM_KDA_COUNT;
  if (chunk < 0)
    return false;
  const I c = I(C), k = I(chunk);
  I first = 0;
  for (I n = 0; n < I(N); ++n) {
    const I len = I(cu[n + 1]) - I(cu[n]);
    const I count = (len + c - 1) / c;
    if (k < first + count) {
      const I offset = (k - first) * c;
      out.seq = n;
      out.start = cu[n] + offset;
      out.len = len - offset < c ? len - offset : c;
      return true;
    }
    first += count;
  }
  return false;
}

#undef LOOM_KDA_COUNT

/// One (chunk, head) slot holds, in this order (row-major, rows i < C;
/// rows at or past the chunk's length are zero):
///   w   [C][K]  A diag(beta) (K.e^G)
///   qg  [C][K]  scale * Q.e^G
///   kd  [C][K]  K.e^{G_last - G}
///   u   [C][V]  A diag(beta) V
///   aqk [C][C]  scale * Lower-incl(per-pair q_i k_j e^{G_i - G_j})
///   eg  [K]     e^{G_last}
LOOM_HOST_DEVICE inline int64_t kdaWorkspaceFloatsPerChunkHead(int64_t C,
                                                               int64_t K,
                                                               int64_t V) {
  return 3 * C * K + C * V + C * C + K;
}

/// Whole workspace: slot (chunk, h) at (chunk * H + h) * perChunkHead.
LOOM_HOST_DEVICE inline int64_t kdaWorkspaceFloats(int64_t maxChunks,
                                                   int64_t H, int64_t C,
                                                   int64_t K, int64_t V) {
  return maxChunks * H * kdaWorkspaceFloatsPerChunkHead(C, K, V);
}

/// Pointers into one slot, in the layout above (F = float or const float).
template <typename F> struct KdaSlotT { F *w, *qg, *kd, *u, *aqk, *eg; };

template <typename F>
LOOM_HOST_DEVICE inline KdaSlotT<F> kdaSlot(F *workspace, int64_t chunk,
                                            int64_t h, int64_t H, int64_t C,
                                            int64_t K, int64_t V) {
  F *base =
      workspace + (chunk * H + h) * kdaWorkspaceFloatsPerChunkHead(C, K, V);
  KdaSlotT<F> s;
  s.w = base;
  s.qg = s.w + C * K;
  s.kd = s.qg + C * K;
  s.u = s.kd + C * K;
  s.aqk = s.u + C * V;
  s.eg = s.aqk + C * C;
  return s;
}

} // namespace kda
} // namespace loom

#endif // LOOM_KERNELS_COMMON_KDACHUNKS_H
