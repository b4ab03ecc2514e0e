//===- BulkCopy.cuh - The bulk copy engine and mbarriers ---------*- CUDA -*-===//
//
// Wrappers of the sm_90 instructions that move bytes without threads doing
// the loads: `cp.async.bulk` (global -> shared, completing on an mbarrier by
// transaction bytes) and `cp.async.bulk.prefetch.L2` (global -> L2, no
// completion). Both exist on sm_90a and sm_100a. Addresses and sizes are
// multiples of 16 bytes.
//
// A bulk copy writes shared memory through the async proxy: a thread that
// waited on its mbarrier sees the bytes; shared memory that generic-proxy
// code used before must be fenced (fenceProxyAsyncShared) before a bulk copy
// overwrites it.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_BULKCOPY_CUH
#define LOOM_KERNELS_NVIDIA_BULKCOPY_CUH

#include <cstdint>

namespace loom {
namespace nvidia {

__device__ __forceinline__ uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// One thread: an mbarrier expecting `count` arrivals.
__device__ __forceinline__ void mbarrierInit(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(
                   sharedAddress(bar)),
               "r"(count)
               : "memory");
  // The bulk copy engine (async proxy) must see the initialised barrier.
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// Arrives once and expects `bytes` more of transactions in this phase.
__device__ __forceinline__ void mbarrierArriveExpectTx(uint64_t *bar,
                                                       uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
          sharedAddress(bar)),
      "r"(bytes)
      : "memory");
}

/// Arrives once (no transaction bytes): release semantics, so this thread's
/// earlier accesses are ordered before a wait that sees the phase complete.
__device__ __forceinline__ void mbarrierArrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(
                   sharedAddress(bar))
               : "memory");
}

/// Waits until the phase of parity `phase` has completed.
__device__ __forceinline__ void mbarrierWait(uint64_t *bar, uint32_t phase) {
  asm volatile("{\n"
               ".reg .pred done;\n"
               "wait:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra wait;\n"
               "}" ::"r"(sharedAddress(bar)),
               "r"(phase)
               : "memory");
}

/// Orders this thread's earlier generic-proxy accesses of shared memory
/// before later async-proxy ones (a bulk copy into the same bytes).
__device__ __forceinline__ void fenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/// `bytes` from global `src` to shared `dst`, completing on `bar` (whose
/// phase must expect them: mbarrierArriveExpectTx).
__device__ __forceinline__ void bulkCopyToShared(void *dst, const void *src,
                                                 uint32_t bytes,
                                                 uint64_t *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes [%0], [%1], %2, [%3];" ::"r"(sharedAddress(dst)),
               "l"(src), "r"(bytes), "r"(sharedAddress(bar))
               : "memory");
}

/// An L2 policy that keeps lines until they are read (evict_last).
__device__ __forceinline__ uint64_t l2EvictLastPolicy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;"
               : "=l"(policy));
  return policy;
}

/// Starts bringing `bytes` at global `src` into L2 under `policy`; nothing
/// waits for it.
__device__ __forceinline__ void bulkPrefetchL2(const void *src, uint32_t bytes,
                                               uint64_t policy) {
  asm volatile(
      "cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(
          src),
      "r"(bytes), "l"(policy)
      : "memory");
}

} // namespace nvidia
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_BULKCOPY_CUH
