//===- DecoderCommon.cuh - What the sm90 decoder bodies share -*- CUDA -*-===//
//
// The names the decoder bodies' headers (DecoderBodies.cuh, LinearBodies.cuh,
// GqaDecodeBodies.cuh) share: the loom::nvidia helpers they use unqualified,
// the optional-buffer and 16-bit type traits, and the row copies.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_SM90_DECODERCOMMON_CUH
#define LOOM_KERNELS_NVIDIA_SM90_DECODERCOMMON_CUH

#include "kernels/nvidia/Numerics.cuh"
#include "kernels/nvidia/sm90/Aliases.cuh"

#include <cstdint>
#include <type_traits>


namespace loom {
namespace sm90 {

namespace detail {
template <typename T> struct NoDeduce { using type = T; };
/// Keeps a parameter out of deduction, so `nullptr` works for an optional
/// buffer whose type follows another argument (as in the host bodies).
template <typename T> using NoDeduceT = typename NoDeduce<T>::type;

template <typename T>
constexpr bool kIs16Bit = std::is_same_v<T, bf16> || std::is_same_v<T, f16>;

using nv::laneId;
using nv::warpId;

/// dst[0..n) = src[0..n) converted; 16-byte moves when both allow it.
template <int kThreads, typename TS, typename TD>
__device__ void copyRow(const TS *src, TD *dst, int64_t n) {
  if constexpr (std::is_same_v<TS, TD>) {
    const int64_t bytes = n * int64_t(sizeof(TS));
    if (bytes % 16 == 0 && nv::isAligned16(src) && nv::isAligned16(dst)) {
      const uint4 *s = reinterpret_cast<const uint4 *>(src);
      uint4 *d = reinterpret_cast<uint4 *>(dst);
      for (int64_t i = threadIdx.x; i < bytes / 16; i += kThreads)
        d[i] = s[i];
      return;
    }
  } else {
    if (n % 8 == 0 && nv::isAligned16(src) && nv::isAligned16(dst)) {
      for (int64_t i = threadIdx.x * 8; i < n; i += kThreads * 8) {
        float v[8];
        nv::load8(src + i, v);
        nv::store8(dst + i, v);
      }
      return;
    }
  }
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    nv::stF(dst, i, nv::ldF(src, i));
}

template <int kThreads, typename TD>
__device__ void fillRow(TD *dst, int64_t n, float value) {
  for (int64_t i = threadIdx.x; i < n; i += kThreads)
    nv::stF(dst, i, value);
}
} // namespace detail

} // namespace sm90
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_SM90_DECODERCOMMON_CUH
