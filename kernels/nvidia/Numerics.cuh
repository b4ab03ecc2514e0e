//===- Numerics.cuh - Device conversions and warp primitives -----*- CUDA
//-*-===//
//
// What every NVIDIA task body shares: storage types to and from fp32, 16-byte
// vector loads of 8 elements, warp reductions, fast exp2, the tensor-core
// (mma.sync / ldmatrix) and async-copy (cp.async) wrappers, and the status
// codes bodies return.
//
// The storage types are loom::bf16 / loom::f16 from kernels/common/Numerics.h
// (16-bit patterns), the same types the emitted code and the host bodies use,
// so a buffer pointer means the same thing on both sides. Names here differ
// from the host helpers (toFloat, load, store): both live under `loom`, and
// argument-dependent lookup would otherwise see the host-only versions too.
//
// Rounding: bf16/f16 stores round to nearest even (cvt.rn), as the host's
// toBf16/toF16 do, so device and host agree bit for bit whenever their fp32
// values agree.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_NUMERICS_CUH
#define LOOM_KERNELS_NVIDIA_NUMERICS_CUH

#include "kernels/common/DeviceAbi.h"
#include "kernels/common/Numerics.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace loom {
namespace nvidia {

//===----------------------------------------------------------------------===//
// Status codes a body returns (block-uniform). 0 is success; the interpreter
// writes any other value to LoomWorkerStatus::error. Negative values are the
// interpreter's own (see Interpreter.cuh).
//===----------------------------------------------------------------------===//

constexpr int32_t kBodyOk = LOOM_BODY_OK;
/// A meta value out of range: what a tile returns when embedding (which
/// returns the host's bool) reports a token id >= vocab.
constexpr int32_t kBodyBadIndex = LOOM_BODY_BAD_INDEX;
/// The launch gave less dynamic shared memory than the body needs.
constexpr int32_t kBodySmemTooSmall = LOOM_BODY_SMEM_TOO_SMALL;
/// A body's own wait for other workers (the MLA pieces of a request) ran
/// past its bound: a worker it waited for failed or never came.
constexpr int32_t kBodyWaitTimedOut = LOOM_BODY_WAIT_TIMED_OUT;

//===----------------------------------------------------------------------===//
// Small integer helpers usable on both sides (std::min is host-only without
// --expt-relaxed-constexpr).
//===----------------------------------------------------------------------===//

__host__ __device__ __forceinline__ int64_t imin(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__host__ __device__ __forceinline__ int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}
__host__ __device__ __forceinline__ int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
__host__ __device__ __forceinline__ int64_t roundUp(int64_t a, int64_t b) {
  return ceilDiv(a, b) * b;
}

//===----------------------------------------------------------------------===//
// Scalar conversions
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float toF32(bf16 v) {
  return __uint_as_float(uint32_t(v.bits) << 16);
}
__device__ __forceinline__ float toF32(f16 v) {
  return __half2float(__ushort_as_half(v.bits));
}
__device__ __forceinline__ float toF32(float v) { return v; }

template <typename T> __device__ __forceinline__ T fromF32(float v);
template <> __device__ __forceinline__ bf16 fromF32<bf16>(float v) {
  return bf16{__bfloat16_as_ushort(__float2bfloat16_rn(v))};
}
template <> __device__ __forceinline__ f16 fromF32<f16>(float v) {
  return f16{__half_as_ushort(__float2half_rn(v))};
}
template <> __device__ __forceinline__ float fromF32<float>(float v) {
  return v;
}

/// p[i] as fp32 / p[i] = v rounded to T. Plain (weak) accesses: data that
/// other workers produced is visible after the interpreter's acquire.
template <typename T>
__device__ __forceinline__ float ldF(const T *p, int64_t i) {
  return toF32(p[i]);
}
template <typename T>
__device__ __forceinline__ void stF(T *p, int64_t i, float v) {
  p[i] = fromF32<T>(v);
}

//===----------------------------------------------------------------------===//
// 8-element vectors: one 16-byte access for bf16/f16, two for float.
// Callers check alignment with isAligned16 on the base and keep element
// offsets multiples of 8.
//===----------------------------------------------------------------------===//

__device__ __forceinline__ bool isAligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

__device__ __forceinline__ float2 unpackBf16x2(uint32_t w) {
  return make_float2(__uint_as_float(w << 16),
                     __uint_as_float(w & 0xffff0000u));
}
__device__ __forceinline__ float2 unpackF16x2(uint32_t w) {
  __half2 h = *reinterpret_cast<__half2 *>(&w);
  return __half22float2(h);
}
__device__ __forceinline__ uint32_t packBf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}
__device__ __forceinline__ uint32_t packF16x2(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

/// Unpacks a 16-byte word of 8 16-bit elements of type T.
template <typename T>
__device__ __forceinline__ void unpack8(uint4 u, float (&v)[8]) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = std::is_same_v<T, bf16> ? unpackBf16x2(w[i]) : unpackF16x2(w[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

template <typename T>
__device__ __forceinline__ uint4 pack8(const float (&v)[8]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = std::is_same_v<T, bf16> ? packBf16x2(v[2 * i], v[2 * i + 1])
                                   : packF16x2(v[2 * i], v[2 * i + 1]);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// The 8 products a[i] * b[i] of two 16-byte words of T, each rounded to T
/// once, as the host's: the fp32 product of two 16-bit values is exact,
/// and pack8 rounds it. (__hmul2_rn on bf16 pairs made ptxas spill in the
/// linear body that uses this.)
template <typename T>
__device__ __forceinline__ uint4 mul8(uint4 a, uint4 b) {
  float x[8], y[8];
  unpack8<T>(a, x);
  unpack8<T>(b, y);
#pragma unroll
  for (int e = 0; e < 8; ++e)
    x[e] *= y[e];
  return pack8<T>(x);
}

/// The sum of the squares of the 8 elements of a 16-byte word of T.
template <typename T>
__device__ __forceinline__ float sumSq8(uint4 u) {
  float v[8];
  unpack8<T>(u, v);
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < 8; ++e)
    s += v[e] * v[e];
  return s;
}

/// v[0..8) = p[0..8) as fp32; p is 16-byte aligned.
template <typename T>
__device__ __forceinline__ void load8(const T *p, float (&v)[8]) {
  if constexpr (std::is_same_v<T, float>) {
    float4 a = reinterpret_cast<const float4 *>(p)[0];
    float4 b = reinterpret_cast<const float4 *>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    unpack8<T>(*reinterpret_cast<const uint4 *>(p), v);
  }
}

/// p[0..8) = v rounded to T; p is 16-byte aligned.
template <typename T>
__device__ __forceinline__ void store8(T *p, const float (&v)[8]) {
  if constexpr (std::is_same_v<T, float>) {
    reinterpret_cast<float4 *>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4 *>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    *reinterpret_cast<uint4 *>(p) = pack8<T>(v);
  }
}

/// A 16-byte load that does not allocate in L1: for streams read once per
/// block (weights). Coherent (not .nc), so it is safe on any buffer; volatile
/// so the compiler keeps it after the interpreter's acquire.
__device__ __forceinline__ uint4 ldStream16(const void *p) {
  uint4 r;
  asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();

/// 2^x in one MUFU.EX2 (rel. error ~2^-22; -inf gives 0, subnormals flush).
__device__ __forceinline__ float fastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// 1 / d for a normal d in [1, 2^126): MUFU.RCP and one Newton step, which
/// is what IEEE `1.f / d` does in its fast branch, without the range check
/// that sends a divisor above 2^126 (or a subnormal one) to a far slow-path
/// call.
__device__ __forceinline__ float rcpAtLeastOne(float d) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return fmaf(r, fmaf(-d, r, 1.f), r);
}

/// The logistic function 1 / (1 + e^-x), its divisor kept in [1, 2]. With
/// `1.f / (1.f + expf(-x))` every x below -87 took the division's slow-path
/// call (code at the far end of the kernel): on the H200, KDA phase-0 tasks
/// of a head whose bounded-gate inputs went there ran up to 1.8x longer
/// than the others, on some SMs and not on others, so a launch's time
/// depended on where its blocks landed (bench/results/h200/README.md).
__device__ __forceinline__ float sigmoid(float x) {
  const float e = expf(-fabsf(x));
  const float r = rcpAtLeastOne(1.f + e);
  return x >= 0.f ? r : e * r;
}

/// log2(x) in one MUFU.LG2 (abs. error ~2^-22 for x in [0.5, 2], rel.
/// error ~2^-22 elsewhere): logf's inline range reduction, not needed for
/// the sums of exponentials it takes here.
__device__ __forceinline__ float fastLog2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// 2^(m - mNew), 0 when m is -inf (so -inf - -inf never makes a NaN).
__device__ __forceinline__ float rescale2(float m, float mNew) {
  return m == kNegInf ? 0.f : fastExp2(m - mNew);
}

/// A running softmax state (base-2 max m, weight sum l, kN weighted sums
/// acc) combined with lane ^ off's by shuffles: both lanes end with the
/// pair's state. Every lane of the warp must take part.
template <int kN>
__device__ __forceinline__ void combineSoftmaxWithLane(float &m, float &l,
                                                       float (&acc)[kN],
                                                       int off) {
  const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
  const float l2 = __shfl_xor_sync(0xffffffffu, l, off);
  const float mNew = fmaxf(m, m2);
  const float a = rescale2(m, mNew), c = rescale2(m2, mNew);
  l = l * a + l2 * c;
#pragma unroll
  for (int e = 0; e < kN; ++e)
    acc[e] = acc[e] * a + __shfl_xor_sync(0xffffffffu, acc[e], off) * c;
  m = mNew;
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

/// Sum over all kThreads threads; every thread gets the result. `scratch`
/// holds kThreads / 32 floats of shared memory. Two barriers, so the scratch
/// may be reused right after.
template <int kThreads>
__device__ __forceinline__ float blockSum(float v, float *scratch) {
  constexpr int kWarps = kThreads / 32;
  v = warpSum(v);
  if ((threadIdx.x & 31) == 0)
    scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w)
    total += scratch[w];
  __syncthreads();
  return total;
}

__device__ __forceinline__ int laneId() { return threadIdx.x & 31; }
__device__ __forceinline__ int warpId() { return threadIdx.x >> 5; }

/// 32-bit word i of a 16-byte vector.
__device__ __forceinline__ uint32_t word(const uint4 &u, int i) {
  return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

/// Bytes of dynamic shared memory this launch has (the %dynamic_smem_size
/// register): bodies with a shared-memory fast path check it.
__device__ __forceinline__ uint32_t dynamicSmemBytes() {
  uint32_t r;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
  return r;
}

//===----------------------------------------------------------------------===//
// Tensor cores: mma.sync m16n8k16 (fp32 accumulate) and ldmatrix.
//
// Fragment layout (PTX ISA, "mma.m16n8k16"): lane = 4 * g + q.
//   A (16x16, row): a[0] = (g, 2q..2q+1), a[1] = (g+8, 2q..), a[2] = (g,
//   2q+8..),
//                   a[3] = (g+8, 2q+8..), two 16-bit elements per register.
//   B (16x8, col):  b[0] = (k 2q..2q+1, n g), b[1] = (k 2q+8.., n g).
//   C (16x8):       c[0..1] = (g, 2q..2q+1), c[2..3] = (g+8, 2q..2q+1).
//===----------------------------------------------------------------------===//

template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4],
                                         uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, bf16>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                   "r"(b1));
  }
}

/// c += the products of one lane's 16-byte chunks: 8 elements of A row g
/// (rowLo), of A row g + 8 (rowHi) and of B column g (col), all at the same
/// 8 k. The sum over k does not care which k a fragment slot holds as long
/// as A and B agree, so word 2sub feeds slots 2q, 2q+1 and word 2sub + 1
/// slots 2q+8, 2q+9 of mma number sub, in A and B alike: a chunk per lane
/// and row covers two k16 steps of 4 lanes' 32 contiguous k.
template <typename T>
__device__ __forceinline__ void mma16816Chunks(float (&c)[4],
                                               const uint4 &rowLo,
                                               const uint4 &rowHi,
                                               const uint4 &col) {
#pragma unroll
  for (int sub = 0; sub < 2; ++sub) {
    const uint32_t a[4] = {word(rowLo, 2 * sub), word(rowHi, 2 * sub),
                           word(rowLo, 2 * sub + 1), word(rowHi, 2 * sub + 1)};
    mma16816<T>(c, a, word(col, 2 * sub), word(col, 2 * sub + 1));
  }
}

__device__ __forceinline__ uint32_t smemAddr(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Four 8x8 16-bit matrices; lane l gives the row address of matrix l / 8,
/// row l % 8. Register j receives matrix j: (row l / 4, cols 2(l % 4)..+1).
__device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], const void *p) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(smemAddr(p)));
}

/// As ldmatrixX4, transposed: register j receives matrix j's
/// (rows 2(l % 4)..+1, col l / 4).
__device__ __forceinline__ void ldmatrixX4Trans(uint32_t (&r)[4],
                                                const void *p) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(smemAddr(p)));
}

//===----------------------------------------------------------------------===//
// Async copies global -> shared (cp.async, Ampere+): 16 bytes per thread,
// zero-filled when `valid` is false (no global bytes are read then).
//===----------------------------------------------------------------------===//

__device__ __forceinline__ void cpAsync16(void *smemDst, const void *src,
                                          bool valid = true) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smemAddr(smemDst)),
      "l"(src), "r"(valid ? 16 : 0)
      : "memory");
}

/// A read-only 32-bit global load that stays where it is written: volatile,
/// so the compiler neither sinks it to its use nor merges it, and a load
/// issued a loop iteration ahead hides its latency behind that iteration.
__device__ __forceinline__ int32_t ldgAhead(const int32_t *p) {
  int32_t v;
  asm volatile("ld.global.nc.s32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

/// Waits until at most `kPending` of this thread's committed groups are in
/// flight. A __syncthreads must follow before other threads read the data.
template <int kPending> __device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

} // namespace nvidia
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_NUMERICS_CUH
