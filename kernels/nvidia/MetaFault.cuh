//===- MetaFault.cuh - A block's refused meta value ------------*- CUDA -*-===//
//
// recordMetaFault (kernels/common/MetaGuard.h) on NVIDIA devices: the first
// refused value of a task goes to the block's static shared memory, which
// the worker loop (Interpreter.cuh) clears at entry and reads after the
// barrier that ends each body; a set record fails the task with
// LOOM_BODY_BAD_INDEX and goes to the worker's status.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_METAFAULT_CUH
#define LOOM_KERNELS_NVIDIA_METAFAULT_CUH

#include "kernels/common/MetaGuard.h"

namespace loom {
namespace nvidia {

using ::loom::MetaFaultSlot;

/// The block's record (static shared memory, for the whole launch).
__device__ __forceinline__ MetaFaultSlot &metaFaultSlot() {
  __shared__ MetaFaultSlot slot;
  return slot;
}

/// Out of line: the checks sit in hot loops, and this path is cold.
__device__ __noinline__ void recordMetaFaultSlow(const void *where,
                                                int64_t value, int32_t reason) {
  MetaFaultSlot &slot = metaFaultSlot();
  if (atomicCAS(&slot.taken, 0, 1) == 0) {
    slot.fault.where = where;
    slot.fault.value = value;
    slot.fault.reason = reason;
  }
}

} // namespace nvidia

__host__ __device__ inline void recordMetaFault(const void *where,
                                                int64_t value, int32_t reason) {
#ifdef __CUDA_ARCH__
  nvidia::recordMetaFaultSlow(where, value, reason);
#else
  (void)where, (void)value, (void)reason;
#endif
}

} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_METAFAULT_CUH
