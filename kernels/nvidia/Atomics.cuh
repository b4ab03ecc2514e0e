//===- Atomics.cuh - The NVIDIA memory model of Loom's events ----*- CUDA
//-*-===//
//
// Written down once; the interpreter loop (Interpreter.cuh) is the only user.
//
// Events are 64-bit counters in global memory that only grow. Launch `epoch`
// (1, 2, ...) considers event e complete when its count reaches
// epoch * needs[e]. The protocol, in PTX memory-model terms (PTX ISA,
// "Memory Consistency Model"):
//
//  producer block (after the task body)
//    1. every thread's global stores of the body are issued (bodies use only
//       synchronous stores; a body that used cp.async.bulk / TMA stores would
//       have to wait for them (cp.async.bulk.wait_group) before step 2);
//    2. __syncthreads(): bar.sync orders all of the block's stores before
//       thread 0's next operations (barriers are morally strong at CTA scope
//       and causality order is transitive);
//    3. thread 0: a task's one trigger is red.release.gpu.add(count, 1);
//       several are fence.acq_rel.gpu, then red.relaxed.gpu.add on each (a
//       fence followed by a strong write is a release pattern). Either is
//       cumulative over everything ordered before it by step 2. A task
//       without work (nothing read or written) triggers relaxed.
//
//  consumer block (before the task body)
//    4. thread 0: ld.acquire.gpu polls of the count until count >= epoch *
//       needs. The poll that sees it synchronizes with the release of
//       every producer whose add it observed (later adds are RMWs, so each
//       release heads a release sequence the observed value belongs to):
//       all producers' body stores happen before what follows. In hardware
//       the acquire is also what invalidates the SM's L1, so plain (weak,
//       L1-cached) loads in the body read fresh data. A task without waits
//       has no acquire;
//    5. __syncthreads(): the other threads of the block are ordered after
//       thread 0's acquire and may read the inputs with plain loads.
//
// Scope: gpu, because all workers of a program run on one device. A
// program spanning GPUs would use .sys on the counters of cross-GPU events.
// Never use ld.global.nc (__ldg) or const __restrict__ pointers on buffers
// another worker writes during the launch: the non-coherent path is not
// covered by the acquire.
//
// Host-mapped memory (status, abort flag) is written and read with
// .relaxed.sys operations: the host watches it while the kernel runs.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_ATOMICS_CUH
#define LOOM_KERNELS_NVIDIA_ATOMICS_CUH

#include <cstdint>

namespace loom {
namespace nvidia {

/// Relaxed, device-scope load of an event counter (a poll).
__device__ __forceinline__ unsigned long long
loadRelaxedGpu(const unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];"
               : "=l"(v)
               : "l"(p)
               : "memory");
  return v;
}

/// Acquire, device-scope load: the loop's polls.
__device__ __forceinline__ unsigned long long
loadAcquireGpu(const unsigned long long *p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];"
               : "=l"(v)
               : "l"(p)
               : "memory");
  return v;
}

/// The fence of the release pattern before several relaxed increments.
__device__ __forceinline__ void fenceAcqRelGpu() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

/// Relaxed device-scope add without a result: the trigger after
/// fenceAcqRelGpu.
__device__ __forceinline__ void redAddRelaxedGpu(unsigned long long *p,
                                                 unsigned long long v) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}

/// Release add (fence and add in one): a task's only trigger.
__device__ __forceinline__ void redAddReleaseGpu(unsigned long long *p,
                                                 unsigned long long v) {
  asm volatile("red.release.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}

/// Relaxed fetch-add: dynamic-mode tickets. Ticket order only hands out
/// work; the events order the data, so no ordering is needed here.
__device__ __forceinline__ unsigned long long
fetchAddRelaxedGpu(unsigned long long *p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}

/// Release fetch-add: an arrival that publishes the caller's earlier stores
/// and tells it how many arrived before.
__device__ __forceinline__ unsigned long long
fetchAddReleaseGpu(unsigned long long *p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.release.gpu.global.add.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}

/// Acquire-release fetch-add: an arrival that publishes the caller's earlier
/// stores and, when the value it sees makes it the last, also sees everyone
/// else's.
__device__ __forceinline__ unsigned long long
fetchAddAcqRelGpu(unsigned long long *p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;"
               : "=l"(old)
               : "l"(p), "l"(v)
               : "memory");
  return old;
}

/// Relaxed device-scope store: the control words.
__device__ __forceinline__ void storeRelaxedGpu(unsigned long long *p,
                                                unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v)
               : "memory");
}

//--- Host-mapped memory (generic addresses, system scope) -----------------//

__device__ __forceinline__ int32_t loadRelaxedSys(const volatile int32_t *p) {
  int32_t v;
  asm volatile("ld.relaxed.sys.s32 %0, [%1];"
               : "=r"(v)
               : "l"(const_cast<const int32_t *>(p))
               : "memory");
  return v;
}

__device__ __forceinline__ void storeRelaxedSys(int32_t *p, int32_t v) {
  asm volatile("st.relaxed.sys.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void storeRelaxedSys(volatile int32_t *p,
                                                int32_t v) {
  storeRelaxedSys(const_cast<int32_t *>(p), v);
}

__device__ __forceinline__ void storeRelaxedSys(uint64_t *p, uint64_t v) {
  asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

} // namespace nvidia
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_ATOMICS_CUH
