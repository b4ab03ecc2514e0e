//===- MetaFault.h - A workgroup's refused meta value (gfx950) -*- C++ -*-===//
//
// recordMetaFault (kernels/common/MetaGuard.h) on AMD devices, as
// kernels/nvidia/MetaFault.cuh on NVIDIA: the first refused value of a task
// goes to the workgroup's static LDS, which the worker loop (Interpreter.h)
// clears at entry and reads after the barrier that ends each body; a set
// record fails the task with LOOM_BODY_BAD_INDEX and goes to the worker's
// status (seen = the value's address, needed = the value, meta_reason).
//
// The record costs 32 B of the loop's static LDS reserve and nothing on the
// bodies' paths until a value is refused: the compare-and-swap (an LDS
// atomic at workgroup scope, ds_cmpst_rtn_b32) runs only then.
//
// The host pass of a HIP translation unit gets a no-op: the GPU bodies
// include the host bodies' headers (kernels/host/MetaFault.h steps aside in
// HIP translation units), and nothing on the host calls the device bodies.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_METAFAULT_H
#define LOOM_KERNELS_AMD_METAFAULT_H

#include "kernels/amd/HipDevice.h"
#include "kernels/common/MetaGuard.h"

#include <cstdint>

namespace loom {
namespace amd {

using ::loom::MetaFaultSlot;

/// The workgroup's record (static LDS, for the whole launch).
__device__ __forceinline__ MetaFaultSlot &metaFaultSlot() {
  __shared__ MetaFaultSlot slot;
  return slot;
}

/// Whether this thread is the first of the task to record a fault: LDS
/// compare-and-swap at workgroup scope (the slot is the workgroup's own).
__device__ __forceinline__ bool takeMetaFaultSlot(MetaFaultSlot &slot) {
  int32_t expected = 0;
  return __hip_atomic_compare_exchange_strong(
      &slot.taken, &expected, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED,
      __HIP_MEMORY_SCOPE_WORKGROUP);
}

} // namespace amd

__host__ __device__ inline void recordMetaFault(const void *where,
                                                int64_t value, int32_t reason) {
#ifdef __HIP_DEVICE_COMPILE__
  amd::MetaFaultSlot &slot = amd::metaFaultSlot();
  if (amd::takeMetaFaultSlot(slot)) {
    slot.fault.where = where;
    slot.fault.value = value;
    slot.fault.reason = reason;
  }
#else
  (void)where, (void)value, (void)reason;
#endif
}

} // namespace loom

#endif // LOOM_KERNELS_AMD_METAFAULT_H
