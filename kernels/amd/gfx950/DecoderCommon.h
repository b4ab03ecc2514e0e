//===- DecoderCommon.h - What the gfx950 decoder bodies share - -*- C++ -*-===//
//
// The names the decoder bodies' headers (DecoderBodies.h, LinearBodies.h,
// GqaDecodeBodies.h) share: the loom::amd helpers they use unqualified, the
// optional-buffer type trait and the row copy.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_GFX950_DECODERCOMMON_H
#define LOOM_KERNELS_AMD_GFX950_DECODERCOMMON_H

#include "kernels/amd/HipDevice.h"

#include <cstdint>
#include <type_traits>

namespace loom {
namespace gfx950 {

namespace am = ::loom::amd;
using am::ceilDiv;
using am::imax;
using am::imin;
using am::roundUp;

namespace detail {
template <typename T> struct NoDeduce { using type = T; };
/// Keeps a parameter out of deduction, so `nullptr` works for an optional
/// buffer whose type follows another argument (as in the host bodies).
template <typename T> using NoDeduceT = typename NoDeduce<T>::type;

/// dst[0..n) = src[0..n) converted; 16-byte moves when both allow it.
template <int kThreads, typename TS, typename TD>
__device__ __forceinline__ void copyRow(const TS *src, TD *dst, int64_t n) {
  const int tid = int(am::threadId());
  if constexpr (std::is_same_v<TS, TD>) {
    const int64_t bytes = n * int64_t(sizeof(TS));
    if (bytes % 16 == 0 && am::isAligned16(src) && am::isAligned16(dst)) {
      for (int64_t i = tid; i < bytes / 16; i += kThreads)
        am::stGlobal16(
            reinterpret_cast<char *>(dst) + 16 * i,
            am::ldGlobal16(reinterpret_cast<const char *>(src) + 16 * i));
      return;
    }
  } else {
    if (n % 8 == 0 && am::isAligned16(src) && am::isAligned16(dst)) {
      for (int64_t i = int64_t(tid) * 8; i < n; i += kThreads * 8) {
        float v[8];
        am::load8(src + i, v);
        am::store8(dst + i, v);
      }
      return;
    }
  }
  for (int64_t i = tid; i < n; i += kThreads)
    am::stF(dst, i, am::ldF(src, i));
}
} // namespace detail

} // namespace gfx950
} // namespace loom

#endif // LOOM_KERNELS_AMD_GFX950_DECODERCOMMON_H
