//===- KdaTf32.cuh - tf32 tensor-core wrappers for KDA ---------*- CUDA -*-===//
//
// The KDA fast path multiplies fp32 operands on the tensor cores as tf32
// (mma.sync m16n8k8, fp32 accumulate): Numerics.cuh has the 16-bit shapes
// only. Fragment layout (PTX ISA, "mma.m16n8k8", .tf32), lane = 4 g + q:
//   A (16 x 8):  a0 = (g, q), a1 = (g + 8, q), a2 = (g, q + 4), a3 = (g + 8, q
//   + 4) B (8 x 8):   b0 = (k q, n g), b1 = (k q + 4, n g) C (16 x 8):  c0 =
//   (g, 2q), c1 = (g, 2q + 1), c2 = (g + 8, 2q), c3 = (g + 8, 2q + 1)
// The bodies permute k inside each 8-wide step (slot q <-> element 2q, slot
// q + 4 <-> element 2q + 1, the same for A and B, so the sum is unchanged):
// then a lane's two k elements are adjacent (one 8-byte load) and a C tile
// {c0, c2, c1, c3} is directly the A fragment of the next product.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_KDATF32_CUH
#define LOOM_KERNELS_NVIDIA_SM90_KDATF32_CUH

#include <cstdint>

namespace loom {
namespace sm90 {
namespace kda_tc {

/// x rounded to tf32 (nearest, ties away; 10 mantissa bits), as .b32 bits.
__device__ __forceinline__ uint32_t toTf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

/// x = hi + lo with both parts tf32 ("3xTF32": hi*hi + hi*lo + lo*hi keeps
/// ~21 bits of each product, about fp32 accuracy). hi is x rounded, so it
/// also serves alone where tf32 accuracy is enough; x - hi is exact in fp32
/// and truncating it loses at most 2^-21 |x|.
__device__ __forceinline__ void splitTf32(float x, uint32_t &hi, uint32_t &lo) {
  hi = toTf32(x);
  lo = __float_as_uint(x - __uint_as_float(hi)) & 0xffffe000u;
}

/// c += A B, one m16n8k8 tf32 tile (operands already tf32 bit patterns).
__device__ __forceinline__ void mmaTf32(float (&c)[4], uint32_t a0, uint32_t a1,
                                        uint32_t a2, uint32_t a3, uint32_t b0,
                                        uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

} // namespace kda_tc
} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_KDATF32_CUH
