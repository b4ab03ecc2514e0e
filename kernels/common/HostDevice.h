//===- HostDevice.h - Functions for the host and the device ------*- C++ -*-===//
//
// LOOM_HOST_DEVICE marks a function that nvcc and clang's HIP mode also
// compile for the device: the formulas in kernels/common (slot and chunk
// arithmetic, workspace layouts) are shared by the host, CUDA and HIP bodies,
// so phases of one program agree on them whatever target runs them; and
// the integer divisions those formulas use, cheap on the device.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_HOSTDEVICE_H
#define LOOM_KERNELS_COMMON_HOSTDEVICE_H

#ifndef LOOM_HOST_DEVICE
#if defined(__CUDACC__)
#define LOOM_HOST_DEVICE __host__ __device__
#elif defined(__HIPCC__) || defined(__HIP__)
// Spelled out: Loom's HIP bodies build without hip_runtime.h's macros.
#define LOOM_HOST_DEVICE __attribute__((host, device))
#else
#define LOOM_HOST_DEVICE
#endif
#endif

/// A function kept out of line: the cold half of a check in a hot loop.
/// Except in HIP: an AMDGPU call goes through the stack ABI (a stack in
/// scratch), which the gfx950 persistent kernel must not have
/// (tests/amd/check-artifact.py: one function, no calls).
#ifndef LOOM_NOINLINE
#if defined(__HIPCC__) || defined(__HIP__)
#define LOOM_NOINLINE __attribute__((always_inline))
#else
#define LOOM_NOINLINE __attribute__((noinline))
#endif
#endif

#include <cstdint>

namespace loom {

/// floor(x / c) for x >= 0, c > 0. Device code avoids the emulated 64-bit
/// division: 32-bit when both fit, else a double estimate corrected by one
/// (exact for x < 2^53, far beyond any token count).
LOOM_HOST_DEVICE inline int64_t divFloorFast(int64_t x, int64_t c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  if (((x | c) >> 31) == 0)
    return int64_t(uint32_t(x) / uint32_t(c));
  int64_t q = int64_t(double(x) / double(c));
  const int64_t r = x - q * c;
  if (r < 0)
    --q;
  else if (r >= c)
    ++q;
  return q;
#else
  return x / c;
#endif
}

/// ceil(x / c) for x >= 0, c > 0, the same way.
LOOM_HOST_DEVICE inline int64_t ceilDivFast(int64_t x, int64_t c) {
  return divFloorFast(x + c - 1, c);
}

} // namespace loom

#endif // LOOM_KERNELS_COMMON_HOSTDEVICE_H
