//===- MetaFault.h - A host task's refused meta value -----------*- C++ -*-===//
//
// recordMetaFault (kernels/common/MetaGuard.h) on the host: the first refused
// value of a task goes to the worker thread's record, which the emitted
// runTask clears before each task and reports as LOOM_BODY_BAD_INDEX after
// it; the runtime reads it through LOOM_HOST_META_FAULT_SYMBOL.
//
// The GPU bodies include the host bodies' operand structs; a CUDA or HIP
// translation unit takes recordMetaFault from its own vendor's header
// (kernels/nvidia/MetaFault.cuh, kernels/amd/MetaFault.h) instead.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_HOST_METAFAULT_H
#define LOOM_KERNELS_HOST_METAFAULT_H

#include "kernels/common/DeviceAbi.h"
#include "kernels/common/MetaGuard.h"

#if !defined(__CUDACC__) && !defined(__HIP__) && !defined(__HIPCC__)
namespace loom {
namespace host {

/// The calling thread's record.
inline LoomMetaFault &metaFaultRecord() {
  static thread_local LoomMetaFault record;
  return record;
}

/// Runs one task's tile function with a fresh record: its code, or
/// LOOM_BODY_BAD_INDEX when it refused a meta value.
template <typename F> int32_t runCheckingMeta(F &&runTile) {
  metaFaultRecord().reason = 0;
  const int32_t code = runTile();
  return code == 0 && metaFaultRecord().reason != 0 ? LOOM_BODY_BAD_INDEX
                                                    : code;
}

} // namespace host

inline void recordMetaFault(const void *where, int64_t value, int32_t reason) {
  LoomMetaFault &record = host::metaFaultRecord();
  if (record.reason != 0)
    return;
  record.where = where;
  record.value = value;
  record.reason = reason;
}

} // namespace loom
#endif

#endif // LOOM_KERNELS_HOST_METAFAULT_H
