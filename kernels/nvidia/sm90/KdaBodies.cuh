//===- KdaBodies.cuh - Device task bodies for KDA prefill ------*- CUDA -*-===//
//
// Block-cooperative versions of kernels/host/KdaBodies.h: the same phases,
// chunk numbering, per-(chunk, head) workspace slot layout (w, qg, kd, u,
// aqk, eg in fp32; rows past a partial chunk zero) and KdaParams. The
// algebra is the host's (see its header). Phase 0 lives in
// KdaIntraBodies.cuh and phase 1 in KdaScanBodies.cuh, with what both share
// in KdaCommon.cuh; all are included here.
//
// Two paths per phase, chosen at run time:
//  * The fast path (C = 64, K = 128, V = 128 in phase 0, 16-bit q/k/v/g/o,
//    aligned buffers, enough shared memory): tensor cores (tf32 mma.sync),
//    described above kdaIntraFastOne and kdaScanFastBlock.
//  * The generic path (any C <= 64, K, V), FFMA only:
//    phase 0 per (chunk, head), all in shared memory when it fits
//    (kdaIntraSmemBytes), else in the slot's own regions: normalised q, k
//    and the gate; its prefix sum G (log2 units); the pairs j <= i with one
//    exp per pair and channel (4 x 4 register blocks); qg, kd and the
//    right-hand sides; forward substitution for [w | u], a thread per
//    column. Phase 1 per (sequence, head, V block of <= 64): the state block
//    in shared memory, each chunk's operands staged by cp.async,
//    double-buffered: v_new = u - w S, o = qg S + Aqk v_new,
//    S = diag(eg) S + kd^T v_new.
// Channel-indexed arrays of the generic phase 0 live transposed,
// [channel][row] with an odd row stride, so a warp reading one row across
// channels and a thread walking its own channel are both free of bank
// conflicts.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH
#define LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH

#include "kernels/nvidia/sm90/KdaCommon.cuh"
#include "kernels/nvidia/sm90/KdaIntraBodies.cuh"
#include "kernels/nvidia/sm90/KdaScanBodies.cuh"

#endif // LOOM_KERNELS_NVIDIA_SM90_KDABODIES_CUH
