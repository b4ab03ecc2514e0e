//===- ArrivalCounters.h - One-phase ops' per-launch arrival counters -*- C++ -*-===//
//
// The rule shared by the bodies that merge their own work in one phase
// (NVIDIA's mla_decode per request, gqa_decode per (request, KV head)
// pair) and the tests that read their counters: counters among the
// launch's events (loom.counters, needs 0) that are never reset. Every item
// receives exactly kLaunchArrivals per launch: each piece adds its token
// count, and the piece holding the item's first token also adds
// kLaunchArrivals - the item's length. So between launches a counter holds a
// multiple of kLaunchArrivals, and the value an arrival sees tells it,
// without a launch number, the launch's target and whether it is the last.
//
// Free of any toolkit: plain C++ here, __host__ __device__ under nvcc/hipcc.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_ARRIVALCOUNTERS_H
#define LOOM_KERNELS_COMMON_ARRIVALCOUNTERS_H

#include "kernels/common/HostDevice.h"

#include <cstdint>

namespace loom {

/// What one item's pieces add to its counter in every launch, together.
constexpr unsigned long long kLaunchArrivals = 1ull << 32;

/// A piece's add: its tokens, plus kLaunchArrivals - len when it holds the
/// item's first token (len: the item's tokens; any value, the sum over the
/// pieces is kLaunchArrivals modulo 2^64 either way).
LOOM_HOST_DEVICE constexpr unsigned long long
arrivalShare(int64_t tokens, bool first, int64_t len) {
  return static_cast<unsigned long long>(tokens) +
         (first ? kLaunchArrivals - static_cast<unsigned long long>(len) : 0);
}

/// The value the counter reaches when the launch whose arrival saw `seen`
/// is complete.
LOOM_HOST_DEVICE constexpr unsigned long long
launchTarget(unsigned long long seen) {
  return (seen / kLaunchArrivals + 1) * kLaunchArrivals;
}

/// Whether the arrival that added `share` and saw `seen` was its item's last
/// in this launch.
LOOM_HOST_DEVICE constexpr bool completesLaunch(unsigned long long seen,
                                                unsigned long long share) {
  return (seen + share) % kLaunchArrivals == 0;
}

} // namespace loom

#endif // LOOM_KERNELS_COMMON_ARRIVALCOUNTERS_H
