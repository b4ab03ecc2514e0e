//===- HipDevice.h - Loom's own small gfx950 device header ---- -*- C++ -*-===//
//
// Everything the AMD task bodies and the interpreter loop need from the
// device, without ROCm headers: the compile line is
//
//   clang++-22 -x hip --offload-arch=gfx950 -nogpuinc -nogpulib \
//              --cuda-device-only --no-gpu-bundle-output -O3 -std=c++17
//              -I<repo>
//
// so there is no hip_runtime.h, no device libraries (ocml/ockl) and no
// libcalls: every math function used here is a clang builtin that the AMDGPU
// backend expands inline (expf, logf, sqrtf, exp2f, ...), or written below.
//
// Contents:
//   * the CUDA-style attribute spellings (__global__, __device__, __shared__)
//     and Loom's kernel bounds (one 256-thread workgroup per CU, occupancy 1:
//     every wave may use all 512 VGPRs + AGPRs of its SIMD);
//   * work-item ids (1-D only), wave / lane numbers (wave64), the workgroup
//     barrier, the dynamic LDS size of this dispatch;
//   * wave reductions by DPP (quad_perm, row_half_mirror, row_mirror inside a
//     16-lane row), ds_swizzle (xor 16) and ds_bpermute (xor 32);
//   * bf16 / f16 <-> fp32 (gfx950 has v_cvt_pk_bf16_f32: round to nearest
//     even in hardware), 16-byte vectors of 8 16-bit elements;
//   * global-address-space pointers (global_load_dwordx4 instead of flat_*),
//     non-temporal streaming loads;
//   * MFMA wrappers with their operand layouts written down once;
//   * s_sleep backoff and the cycle counter (s_memtime).
//
// Every name lives in loom::amd. Device helpers are named ldF/stF/toF32/...
// (not load/store/toFloat) so that argument-dependent lookup on loom::bf16
// never reaches the host-only helpers of kernels/common/Numerics.h.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_HIPDEVICE_H
#define LOOM_KERNELS_AMD_HIPDEVICE_H

#if !defined(__HIP__)
#error                                                                         \
    "kernels/amd/*.h is HIP device code: compile with clang++ -x hip --offload-arch=gfx950 --cuda-device-only"
#endif

#include "kernels/common/DeviceAbi.h"
#include "kernels/common/Numerics.h"

#include <cstdint>
#include <type_traits>

//===----------------------------------------------------------------------===//
// Attribute spellings (what hip_runtime.h would define). __noinline__ is a
// keyword in clang's CUDA/HIP mode and needs no macro.
//===----------------------------------------------------------------------===//

#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __host__
#define __host__ __attribute__((host))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __constant__
#define __constant__ __attribute__((constant))
#endif
#ifndef __forceinline__
#define __forceinline__ __inline__ __attribute__((always_inline))
#endif

/// The bounds of a Loom kernel: exactly `threads` work-items per workgroup
/// and one wave per SIMD (a 256-thread workgroup fills the 4 SIMDs of a CU),
/// so the register allocator may give each wave all 512 registers (256
/// arch VGPRs + 256 AGPRs) instead of aiming for a higher occupancy that a
/// persistent kernel with one workgroup per CU never has.
#define LOOM_AMD_KERNEL_BOUNDS(threads)                                        \
  __attribute__((amdgpu_flat_work_group_size(threads, threads),                \
                 amdgpu_waves_per_eu(1, 1)))

/// A pointer in the global address space: loads and stores through it are
/// global_* (one address computation, vmcnt only) instead of flat_*, which
/// must also check for LDS / scratch apertures and count on lgkmcnt.
#define LOOM_GLOBAL __attribute__((address_space(1)))

namespace loom {
namespace amd {

constexpr int kWaveSize = 64;
/// LDS a workgroup may use on gfx950 (160 KB per CU, all of it to one
/// workgroup).
constexpr int64_t kLdsBytesGfx950 = 163840;

//===----------------------------------------------------------------------===//
// Status codes a body returns (block-uniform). 0 is success; the interpreter
// writes any other value to LoomWorkerStatus::error. Negative values are the
// interpreter's own (Interpreter.h). The numbers are DeviceAbi.h's
// LOOM_BODY_*, shared with the NVIDIA bodies and the runtime.
//===----------------------------------------------------------------------===//

constexpr int32_t kBodyOk = LOOM_BODY_OK;
/// A meta value out of range (embedding: a token id >= vocab).
constexpr int32_t kBodyBadIndex = LOOM_BODY_BAD_INDEX;
/// The dispatch gave less dynamic LDS than the body needs.
constexpr int32_t kBodyLdsTooSmall = LOOM_BODY_SMEM_TOO_SMALL;

//===----------------------------------------------------------------------===//
// Integer helpers usable on both sides.
//===----------------------------------------------------------------------===//

__host__ __device__ __forceinline__ constexpr int64_t imin(int64_t a,
                                                           int64_t b) {
  return a < b ? a : b;
}
__host__ __device__ __forceinline__ constexpr int64_t imax(int64_t a,
                                                           int64_t b) {
  return a > b ? a : b;
}
__host__ __device__ __forceinline__ constexpr int64_t ceilDiv(int64_t a,
                                                              int64_t b) {
  return (a + b - 1) / b;
}
__host__ __device__ __forceinline__ constexpr int64_t roundUp(int64_t a,
                                                              int64_t b) {
  return ceilDiv(a, b) * b;
}

/// Returns `p` held in VGPRs (and, to the compiler, divergent). A body with
/// many buffers keeps every base pointer in a scalar register pair for its
/// whole life, and the 102 SGPRs run out (the excess is spilled to VGPR
/// lanes). Pointers that are only ever offset per lane (row bases of the
/// data a lane loads or stores) lose nothing by living in VGPRs: their
/// address arithmetic is per-lane anyway. The empty asm forces the register
/// class; it emits no instruction beyond the v_mov of the initial copy.
template <typename T> __device__ __forceinline__ T *toVgpr(T *p) {
  uint64_t v = reinterpret_cast<uint64_t>(p);
  uint32_t lo = uint32_t(v), hi = uint32_t(v >> 32);
  asm("" : "+v"(lo), "+v"(hi));
  return reinterpret_cast<T *>((uint64_t(hi) << 32) | lo);
}
/// The same for a 32-bit value (a uniform bound, stride or scale that only
/// enters per-lane arithmetic).
__device__ __forceinline__ int toVgpr(int x) {
  asm("" : "+v"(x));
  return x;
}
__device__ __forceinline__ float toVgpr(float x) {
  asm("" : "+v"(x));
  return x;
}

/// Makes a workgroup-uniform scalar opaque at this point (it stays in an
/// SGPR). At the top of a loop body this stops loop-invariant code motion
/// from hoisting everything computed from it out of the loop -- dozens of
/// derived bounds and addresses that would otherwise all stay live across
/// the loop and overflow the SGPRs; recomputing them per iteration costs a
/// few scalar instructions. `x` must be equal in all lanes (a size, a tile
/// index): v_readfirstlane puts values the compiler cannot prove uniform
/// (e.g. loaded from a task table) into an SGPR first.
__device__ __forceinline__ void opaque(int &x) {
  x = __builtin_amdgcn_readfirstlane(x);
  asm volatile("" : "+s"(x));
}
__device__ __forceinline__ void opaque(float &x) {
  int v = __builtin_amdgcn_readfirstlane(__builtin_bit_cast(int, x));
  asm volatile("" : "+s"(v));
  x = __builtin_bit_cast(float, v);
}
__device__ __forceinline__ void opaque(int64_t &x) {
  int lo = int(uint32_t(uint64_t(x))), hi = int(uint32_t(uint64_t(x) >> 32));
  opaque(lo);
  opaque(hi);
  x = int64_t((uint64_t(uint32_t(hi)) << 32) | uint32_t(lo));
}
template <typename T> __device__ __forceinline__ void opaque(T *&p) {
  const uint64_t u = reinterpret_cast<uint64_t>(p);
  int lo = int(uint32_t(u)), hi = int(uint32_t(u >> 32));
  opaque(lo);
  opaque(hi);
  p = reinterpret_cast<T *>((uint64_t(uint32_t(hi)) << 32) | uint32_t(lo));
}

//===----------------------------------------------------------------------===//
// Work-items. Loom launches 1-D grids of 1-D workgroups whose size is a
// multiple of 64, so the lane is threadIdx & 63 and the wave threadIdx >> 6.
//===----------------------------------------------------------------------===//

__device__ __forceinline__ uint32_t threadId() {
  return __builtin_amdgcn_workitem_id_x();
}
__device__ __forceinline__ uint32_t blockId() {
  return __builtin_amdgcn_workgroup_id_x();
}
/// Number of workgroups: the HSA packet's grid size is in work-items.
__device__ __forceinline__ uint32_t gridDimX() {
  return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x();
}
__device__ __forceinline__ int laneId() { return int(threadId() & 63u); }
/// The wave number, made wave-uniform (an SGPR) with v_readfirstlane so
/// that branches on it are scalar branches.
__device__ __forceinline__ int waveId() {
  return __builtin_amdgcn_readfirstlane(int(threadId() >> 6));
}
/// Makes a value the compiler cannot prove uniform a scalar: only for values
/// that ARE equal in all active lanes.
__device__ __forceinline__ int uniform(int v) {
  return __builtin_amdgcn_readfirstlane(v);
}
/// The same for a 64-bit value (two v_readfirstlane).
__device__ __forceinline__ int64_t uniform64(int64_t v) {
  const uint64_t u = uint64_t(v);
  const uint32_t lo = __builtin_amdgcn_readfirstlane(uint32_t(u));
  const uint32_t hi = __builtin_amdgcn_readfirstlane(uint32_t(u >> 32));
  return int64_t((uint64_t(hi) << 32) | lo);
}

//===----------------------------------------------------------------------===//
// Barriers and waits.
//
// syncThreads is HIP's __syncthreads: a workgroup-scope release fence, the
// s_barrier, a workgroup-scope acquire fence. The fences make LDS (and, for
// waves of one workgroup, global) accesses before the barrier visible after
// it; the compiler emits the s_waitcnt they need.
//===----------------------------------------------------------------------===//

__device__ __forceinline__ void syncThreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/// s_waitcnt vmcnt(0): this wave's vector-memory loads AND stores (gfx9
/// counts both on vmcnt) have completed. A hard wait: the compiler keeps it
/// even where its own scoreboard sees nothing outstanding. Encoding (gfx9):
/// vmcnt [3:0]+[15:14] = 0, expcnt [6:4] = 7, lgkmcnt [11:8] = 15.
__device__ __forceinline__ void waitVmem() {
  __builtin_amdgcn_s_waitcnt(0x0F70);
}

/// Dynamic LDS of this dispatch in bytes: the packet's group_segment_size
/// (static + dynamic, what the runtime allocated) minus this kernel's static
/// LDS. The HSA kernel-dispatch packet: header u16 @0, setup u16 @2,
/// workgroup_size_{x,y,z} u16 @4..8, reserved u16 @10, grid_size_{x,y,z}
/// u32 @12..20, private_segment_size u32 @24, group_segment_size u32 @28.
__device__ __forceinline__ uint32_t dynamicLdsBytes() {
  const uint32_t *packet =
      reinterpret_cast<const uint32_t *>(__builtin_amdgcn_dispatch_ptr());
  return packet[7] - __builtin_amdgcn_groupstaticsize();
}

/// The shader-clock cycle counter (s_memtime), HIP's clock64().
__device__ __forceinline__ uint64_t clock64() {
  return __builtin_readcyclecounter();
}

/// s_sleep for about 64 * 2^level clocks, level 0..4 (s_sleep takes an
/// immediate, hence the switch).
__device__ __forceinline__ void sleepLevel(int level) {
  switch (level) {
  case 0:
    __builtin_amdgcn_s_sleep(1);
    break;
  case 1:
    __builtin_amdgcn_s_sleep(2);
    break;
  case 2:
    __builtin_amdgcn_s_sleep(4);
    break;
  case 3:
    __builtin_amdgcn_s_sleep(8);
    break;
  default:
    __builtin_amdgcn_s_sleep(16);
    break;
  }
}

//===----------------------------------------------------------------------===//
// Cross-lane operations (wave64). Call them with every lane of the wave
// active: DPP and ds_swizzle read the source lane's register whether or not
// that lane is active.
//===----------------------------------------------------------------------===//

namespace dpp {
/// DPP controls (GFX9 encoding of the dpp_ctrl field).
constexpr int kQuadXor1 = 0xB1;       // quad_perm:[1,0,3,2]
constexpr int kQuadXor2 = 0x4E;       // quad_perm:[2,3,0,1]
constexpr int kRowHalfMirror = 0x141; // lane i <- lane 7-i within 8 lanes
constexpr int kRowMirror = 0x140;     // lane i <- lane 15-i within 16 lanes
} // namespace dpp

template <int kCtrl> __device__ __forceinline__ float dppMov(float v) {
  return __builtin_bit_cast(float,
                            __builtin_amdgcn_mov_dpp(__builtin_bit_cast(int, v),
                                                     kCtrl, 0xF, 0xF, false));
}
template <int kCtrl> __device__ __forceinline__ int dppMov(int v) {
  return __builtin_amdgcn_mov_dpp(v, kCtrl, 0xF, 0xF, false);
}

/// The value of lane (lane ^ 16) (within each 32-lane half, ds_swizzle
/// bit mode: and_mask 0x1F, xor_mask 0x10).
__device__ __forceinline__ float swizzleXor16(float v) {
  return __builtin_bit_cast(
      float, __builtin_amdgcn_ds_swizzle(__builtin_bit_cast(int, v), 0x401F));
}
__device__ __forceinline__ int swizzleXor16(int v) {
  return __builtin_amdgcn_ds_swizzle(v, 0x401F);
}
/// The value of lane (lane ^ 32).
__device__ __forceinline__ float permuteXor32(float v) {
  return __builtin_bit_cast(
      float, __builtin_amdgcn_ds_bpermute((laneId() ^ 32) << 2,
                                          __builtin_bit_cast(int, v)));
}
__device__ __forceinline__ int permuteXor32(int v) {
  return __builtin_amdgcn_ds_bpermute((laneId() ^ 32) << 2, v);
}
/// The value of lane `src` (any lane of the wave).
__device__ __forceinline__ float shuffle(float v, int src) {
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(
                                       src << 2, __builtin_bit_cast(int, v)));
}
__device__ __forceinline__ int shuffle(int v, int src) {
  return __builtin_amdgcn_ds_bpermute(src << 2, v);
}

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return a + b;
  }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return __builtin_fmaxf(a, b);
  }
};

/// All-reduce over aligned groups of kLanes lanes (2, 4, 8, 16, 32 or 64);
/// every lane of a group gets the group's result. Each step pairs a lane
/// with one in the other half of its current group (xor 1, xor 2, the
/// mirror of 8, the mirror of 16, xor 16, xor 32), and the operators are
/// commutative, so all lanes of a group get bitwise the same value.
template <int kLanes, typename Op>
__device__ __forceinline__ float groupReduce(float v, Op op) {
  static_assert(kLanes == 2 || kLanes == 4 || kLanes == 8 || kLanes == 16 ||
                    kLanes == 32 || kLanes == 64,
                "group of 2..64 lanes");
  v = op(v, dppMov<dpp::kQuadXor1>(v));
  if constexpr (kLanes >= 4)
    v = op(v, dppMov<dpp::kQuadXor2>(v));
  if constexpr (kLanes >= 8)
    v = op(v, dppMov<dpp::kRowHalfMirror>(v));
  if constexpr (kLanes >= 16)
    v = op(v, dppMov<dpp::kRowMirror>(v));
  if constexpr (kLanes >= 32)
    v = op(v, swizzleXor16(v));
  if constexpr (kLanes >= 64)
    v = op(v, permuteXor32(v));
  return v;
}

__device__ __forceinline__ float waveSum(float v) {
  return groupReduce<64>(v, SumOp{});
}
/// Sum / max over the 16 lanes of a DPP row (lanes 16r .. 16r+15).
__device__ __forceinline__ float rowSum16(float v) {
  return groupReduce<16>(v, SumOp{});
}
__device__ __forceinline__ float rowMax16(float v) {
  return groupReduce<16>(v, MaxOp{});
}

/// Sum over all kThreads threads; every thread gets the same result.
/// `scratch` holds kThreads / 64 floats of LDS. Two barriers, so scratch may
/// be reused right after. Partial sums are added in wave order.
template <int kThreads>
__device__ __forceinline__ float blockSum(float v, float *scratch) {
  constexpr int kWaves = kThreads / kWaveSize;
  v = waveSum(v);
  if (laneId() == 0)
    scratch[waveId()] = v;
  syncThreads();
  float total = 0.f;
#pragma unroll
  for (int w = 0; w < kWaves; ++w)
    total += scratch[w];
  syncThreads();
  return total;
}

/// `p` as a pointer in the global address space, for buffers in device (or
/// host-mapped) memory: its accesses are global_* rather than flat_*.
template <typename T> __device__ __forceinline__ LOOM_GLOBAL T *gptr(T *p) {
  return (LOOM_GLOBAL T *)p;
}
template <typename T>
__device__ __forceinline__ const LOOM_GLOBAL T *gptr(const T *p) {
  return (const LOOM_GLOBAL T *)p;
}

//===----------------------------------------------------------------------===//
// Storage types <-> fp32.
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float toF32(bf16 v) {
  return __builtin_bit_cast(float, uint32_t(v.bits) << 16);
}
__device__ __forceinline__ float toF32(f16 v) {
  return float(__builtin_bit_cast(_Float16, v.bits));
}
__device__ __forceinline__ float toF32(float v) { return v; }

/// fp32 -> T, round to nearest even (v_cvt_pk_bf16_f32 / v_cvt_f16_f32), as
/// the host's toBf16 / toF16 do; a NaN stays a quiet NaN.
template <typename T> __device__ __forceinline__ T fromF32(float v);
template <> __device__ __forceinline__ bf16 fromF32<bf16>(float v) {
  return bf16{__builtin_bit_cast(uint16_t, static_cast<__bf16>(v))};
}
template <> __device__ __forceinline__ f16 fromF32<f16>(float v) {
  return f16{__builtin_bit_cast(uint16_t, static_cast<_Float16>(v))};
}
template <> __device__ __forceinline__ float fromF32<float>(float v) {
  return v;
}

/// p[i] as fp32 / p[i] = v rounded to T, for buffers in device memory
/// (global_* through gptr). Plain (weak) accesses: data other workers
/// produced is visible after the interpreter's acquire.
template <typename T>
__device__ __forceinline__ float ldF(const T *p, int64_t i) {
  return toF32(*gptr(p + i));
}
template <typename T>
__device__ __forceinline__ void stF(T *p, int64_t i, float v) {
  *gptr(p + i) = fromF32<T>(v);
}

template <typename T>
constexpr bool kIs16Bit = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

//===----------------------------------------------------------------------===//
// Vectors and global-memory access.
//===----------------------------------------------------------------------===//

typedef uint32_t u32x4 __attribute__((ext_vector_type(4)));
typedef uint32_t u32x2 __attribute__((ext_vector_type(2)));
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x2 __attribute__((ext_vector_type(2)));
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));

__device__ __forceinline__ bool isAligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

/// 16 bytes from global memory (global_load_dwordx4); p 16-byte aligned.
__device__ __forceinline__ u32x4 ldGlobal16(const void *p) {
  return *gptr(reinterpret_cast<const u32x4 *>(p));
}
/// As ldGlobal16, non-temporal (the nt bit): for streams read once, such as
/// weights, so they do not evict data that is reused. Coherent like any
/// plain load (it is not a constant-cache / scalar load).
__device__ __forceinline__ u32x4 ldStream16(const void *p) {
  return __builtin_nontemporal_load(gptr(reinterpret_cast<const u32x4 *>(p)));
}
__device__ __forceinline__ void stGlobal16(void *p, u32x4 v) {
  *gptr(reinterpret_cast<u32x4 *>(p)) = v;
}

/// Unpacks 8 16-bit elements of type T from a 16-byte word (element e in
/// bits [16e, 16e+16) of the little-endian 128-bit value).
template <typename T>
__device__ __forceinline__ void unpack8(u32x4 u, float (&v)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t w = u[i];
    if constexpr (std::is_same_v<T, bf16>) {
      v[2 * i] = __builtin_bit_cast(float, w << 16);
      v[2 * i + 1] = __builtin_bit_cast(float, w & 0xffff0000u);
    } else {
      v[2 * i] = float(__builtin_bit_cast(_Float16, uint16_t(w & 0xffffu)));
      v[2 * i + 1] = float(__builtin_bit_cast(_Float16, uint16_t(w >> 16)));
    }
  }
}

template <typename T>
__device__ __forceinline__ u32x4 pack8(const float (&v)[8]) {
  u32x4 u;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    u[i] = uint32_t(fromF32<T>(v[2 * i]).bits) |
           (uint32_t(fromF32<T>(v[2 * i + 1]).bits) << 16);
  return u;
}

/// v[0..8) = p[0..8) as fp32; p 16-byte aligned (float: two 16-byte loads).
template <typename T>
__device__ __forceinline__ void load8(const T *p, float (&v)[8]) {
  if constexpr (std::is_same_v<T, float>) {
    const u32x4 a = ldGlobal16(p), b = ldGlobal16(p + 4);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[i] = __builtin_bit_cast(float, a[i]);
      v[4 + i] = __builtin_bit_cast(float, b[i]);
    }
  } else {
    unpack8<T>(ldGlobal16(p), v);
  }
}

/// p[0..8) = v rounded to T; p 16-byte aligned.
template <typename T>
__device__ __forceinline__ void store8(T *p, const float (&v)[8]) {
  if constexpr (std::is_same_v<T, float>) {
    u32x4 a, b;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      a[i] = __builtin_bit_cast(uint32_t, v[i]);
      b[i] = __builtin_bit_cast(uint32_t, v[4 + i]);
    }
    stGlobal16(p, a);
    stGlobal16(p + 4, b);
  } else {
    stGlobal16(p, pack8<T>(v));
  }
}

//===----------------------------------------------------------------------===//
// Math, on the hardware transcendental unit: v_exp_f32 = 2^x, v_log_f32 =
// log2 x, v_sqrt_f32, v_rcp_f32 (~1 ulp each on normal inputs). The inline
// library expansions of expf / logf / sqrtf are avoided on purpose: each
// brings a handful of float constants, and in the fully inlined bodies the
// machine LICM hoists every such constant into its own SGPR for the whole
// kernel (dozens of them), which is what overflowed the 102 SGPRs. The
// results differ from the host's std:: functions by a few ulps, far below
// every tolerance the bodies are tested against.
//===----------------------------------------------------------------------===//

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLog2eLo = 1.925963033500011e-08f; // log2(e) - kLog2e
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();

/// 2^x in one v_exp_f32; -inf gives 0.
__device__ __forceinline__ float fastExp2(float x) {
  return __builtin_amdgcn_exp2f(x);
}
/// e^x as 2^(x log2 e), one rounding of the product.
__device__ __forceinline__ float fastExp(float x) {
  return fastExp2(x * kLog2e);
}
/// e^x to ~2 ulp: the rounding error of t = x log2 e is carried separately
/// (e^x = 2^t 2^r, 2^r ~ 1 + r ln 2), which matters for |x| of tens, where
/// fastExp loses |x| * 2^-24 relative.
/// -inf gives 0, +inf and overflow give inf, NaN stays NaN (the correction
/// is dropped when t is not finite).
__device__ __forceinline__ float expAcc(float x) {
  const float t = x * kLog2e;
  const float r = __builtin_isfinite(t)
                      ? __builtin_fmaf(x, kLog2e, -t) + x * kLog2eLo
                      : 0.f;
  return fastExp2(t) * (1.f + r * kLn2);
}
/// log2 x in one v_log_f32.
__device__ __forceinline__ float fastLog2(float x) {
  return __builtin_amdgcn_logf(x);
}
__device__ __forceinline__ float logAcc(float x) { return fastLog2(x) * kLn2; }
__device__ __forceinline__ float sqrtAcc(float x) {
  return __builtin_amdgcn_sqrtf(x);
}
/// log(1 + x), accurate for small x (Goldberg's correction: the error of
/// rounding 1 + x cancels), as std::log1p to a few ulp.
__device__ __forceinline__ float log1pAcc(float x) {
  const float u = 1.f + x;
  return u == 1.f ? x : logAcc(u) * (x / (u - 1.f));
}
/// 2^(m - mNew), 0 when m is -inf (so -inf - -inf never makes a NaN).
__device__ __forceinline__ float rescale2(float m, float mNew) {
  return m == kNegInf ? 0.f : fastExp2(m - mNew);
}
__device__ __forceinline__ bool isNan(float v) { return v != v; }

//===----------------------------------------------------------------------===//
// MFMA (matrix cores), wave64. D = A B + C with fp32 accumulators.
//
// v_mfma_f32_16x16x32_{bf16,f16} (gfx950): A 16x32, B 32x16, D 16x16.
//   A: lane l holds row i = l % 16, 8 k-values in its 4 VGPRs (k-slot
//      group g = l / 16, slots e = 0..7);
//   B: lane l holds column j = l % 16, the same 8 k-slots of group g;
//   D: lane l holds column j = l % 16, rows i = 4 g + r in register r.
// v_mfma_f32_16x16x4_f32: the same with one fp32 k-value per lane (group g
//   is k itself): A[i = l % 16][k = l / 16], B[k = l / 16][j = l % 16].
//
// Which hardware k each (g, e) slot means does not matter to a caller that
// fills A and B with the same k-assignment (a sum over k is a sum in any
// order): all bodies rely only on "A's slot (g, e) and B's slot (g, e) are
// the same k", on the row/column of A/B being l % 16, and on D's layout.
//===----------------------------------------------------------------------===//

template <typename T>
__device__ __forceinline__ f32x4 mfma16x16x32(u32x4 a, u32x4 b, f32x4 c) {
  static_assert(kIs16Bit<T>, "bf16 or f16 operands");
  if constexpr (std::is_same_v<T, bf16>)
    return __builtin_amdgcn_mfma_f32_16x16x32_bf16(
        __builtin_bit_cast(bf16x8, a), __builtin_bit_cast(bf16x8, b), c, 0, 0,
        0);
  else
    return __builtin_amdgcn_mfma_f32_16x16x32_f16(
        __builtin_bit_cast(f16x8, a), __builtin_bit_cast(f16x8, b), c, 0, 0, 0);
}

__device__ __forceinline__ f32x4 mfma16x16x4f32(float a, float b, f32x4 c) {
  return __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, c, 0, 0, 0);
}

__device__ __forceinline__ f32x4 zero4() { return f32x4{0.f, 0.f, 0.f, 0.f}; }

} // namespace amd
} // namespace loom

#endif // LOOM_KERNELS_AMD_HIPDEVICE_H
