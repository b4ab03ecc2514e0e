//===- Rope.h - RoPE frequencies for host and device -------------*- C++ -*-===//
//
// The frequency of RoPE pair i, with Llama 3.1's scaling (HF rope_type
// "llama3") when a spec asks for it: the one copy every target's bodies use
// (the fp64 oracle, tools/oracle, writes the rule again on its own).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_ROPE_H
#define LOOM_KERNELS_COMMON_ROPE_H

#include "kernels/common/HostDevice.h"

namespace loom {

/// Llama 3.1's RoPE scaling; factor 0: none (plain theta^(-2i/r)).
struct RopeScaling {
  double factor = 0;
  double lowFreqFactor = 1;
  double highFreqFactor = 4;
  double originalMaxPosition = 8192;
};

/// Scales a pair's inverse frequency: wavelengths shorter than
/// originalMaxPosition / highFreqFactor keep it, longer than
/// originalMaxPosition / lowFreqFactor divide it by `factor`, and those in
/// between blend the two linearly in originalMaxPosition / wavelength.
LOOM_HOST_DEVICE inline double ropeScaledInvFreq(double invFreq,
                                                 const RopeScaling &s) {
  if (s.factor <= 0)
    return invFreq;
  const double wavelength = 6.283185307179586476925 / invFreq;
  if (wavelength < s.originalMaxPosition / s.highFreqFactor)
    return invFreq;
  if (wavelength > s.originalMaxPosition / s.lowFreqFactor)
    return invFreq / s.factor;
  const double smooth =
      (s.originalMaxPosition / wavelength - s.lowFreqFactor) /
      (s.highFreqFactor - s.lowFreqFactor);
  return (1 - smooth) * invFreq / s.factor + smooth * invFreq;
}

} // namespace loom

#endif // LOOM_KERNELS_COMMON_ROPE_H
