//===- Atomics.h - The gfx950 memory model of Loom's events --- -*- C++ -*-===//
//
// Written down once; the interpreter loop (Interpreter.h) is the only user.
//
// Events are 64-bit counters in device memory that only grow. Launch `epoch`
// (1, 2, ...) considers event e complete when its count reaches
// epoch * needs[e]. Everything below is expressed with clang's scoped
// builtins (__hip_atomic_*, __builtin_amdgcn_fence) so that the AMDGPU memory
// legalizer -- the implementation of LLVM's documented AMDHSA memory model
// for GFX942/GFX950 ("Memory Model GFX942" in AMDGPUUsage) -- chooses the
// cache bits and cache maintenance. What it emits on gfx950, checked by
// tests/amd/check-isa.sh:
//
//   relaxed load,  agent scope   global_load_dwordx2 ... sc1
//   relaxed RMW,   agent scope   global_atomic_add_x2 ... (no sc1; sc0 only
//                                 when the old value is returned)
//   release fence, agent scope   buffer_wbl2 sc1 ; s_waitcnt vmcnt(0)
//   acquire fence, agent scope   buffer_inv sc1
//   relaxed store/load, system   global_store/load_dword ... sc0 sc1
//
// Why agent scope needs cache maintenance on this chip: an MI350X is one
// agent made of 8 XCDs, each with its own L2. A CU's stores land in its own
// XCD's L2 (the vector L1 is write-through); a CU on another XCD reads its
// own L2. So the release must WRITE BACK this XCD's dirty L2 lines to memory
// (buffer_wbl2 sc1) and wait for that (s_waitcnt vmcnt(0)) before the
// counter is bumped, and the acquire must INVALIDATE the reader's vector L1
// and its XCD's L2 non-coherent lines (buffer_inv sc1) before the body
// reads what the producers wrote. The counters themselves are only ever
// accessed atomically at agent scope (RMW atomics bypass the vector L1;
// agent-scope loads carry sc1), and the memory model makes agent-scope
// atomics on one location coherent across all XCDs of the agent, so polls
// see other XCDs' increments without any maintenance of their own: the
// write-back / invalidate is only for the plain data the events guard.
//
// The protocol:
//
//  producer workgroup (after the task body)
//    1. every wave: s_waitcnt vmcnt(0) (waitVmem): the body's global stores
//       have completed to this XCD's L2. The model does not require this of
//       the other waves (the workgroup barrier plus a cumulative agent
//       release covers them), but it makes the hand-over independent of the
//       order in which one CU's requests reach the L2 channels, and costs
//       nothing the release below would not wait for anyway;
//    2. the workgroup barrier (syncThreads);
//    3. one lane (thread 0): release fence at agent scope (buffer_wbl2 sc1,
//       then a hard s_waitcnt vmcnt(0) so the write-back has finished even
//       where the compiler's scoreboard sees nothing outstanding), then a
//       relaxed agent-scope add of 1 on each triggered event. One fence
//       covers all of a task's triggers.
//
//  consumer workgroup (before the task body)
//    4. thread 0: relaxed agent-scope loads of the count (sc1: not served by
//       a stale cached copy), with s_sleep backoff, until count >= epoch *
//       needs. A relaxed poll never pays for ordering while the wait lasts;
//    5. thread 0: acquire fence at agent scope once after the task's last
//       wait (buffer_inv sc1): synchronizes with every release whose
//       increment the polls observed;
//    6. the workgroup barrier: the other waves are ordered after thread 0's
//       acquire (same CU, same L1, same L2) and read inputs with plain loads.
//
// Bodies read other workers' outputs with plain global loads. Never use
// scalar (s_load) or constant-cache loads for data produced during the
// launch: the scalar cache is not invalidated by buffer_inv. The compiler
// only turns a load into s_load when it can prove the memory is not written
// during the kernel; the fences in the loop make that proof fail for
// everything the bodies read, and pointers handed to bodies are never
// __restrict__ const.
//
// Memory types this assumes (the runtime's side of the contract):
// `events`, `workspace` and the bound buffers are ordinary device memory
// (hipMalloc, coarse-grained), the case the agent-scope sequences above are
// defined for; `status` and `abort_flag` are host-mapped (hipHostMalloc,
// fine-grained), accessed only with system-scope relaxed atomics (sc0 sc1:
// write-through / uncached), so the host watchdog sees them while the
// kernel runs. A program spanning several GPUs would use system scope on
// the counters of cross-GPU events (buffer_wbl2 sc0 sc1 / buffer_inv sc0
// sc1) and fine-grained memory for the data they guard.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_ATOMICS_H
#define LOOM_KERNELS_AMD_ATOMICS_H

#include "kernels/amd/HipDevice.h"

#include <cstdint>

namespace loom {
namespace amd {

//--- Device memory, agent scope --------------------------------------------//

/// Relaxed agent-scope load of an event counter (a poll).
__device__ __forceinline__ unsigned long long
loadRelaxedAgent(const unsigned long long *p) {
  return __hip_atomic_load(gptr(p), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

/// Acquire agent-scope load: the load then buffer_inv sc1. Unused by the
/// loop (which polls relaxed and acquires once); for bodies that hand data
/// between workgroups themselves.
__device__ __forceinline__ unsigned long long
loadAcquireAgent(const unsigned long long *p) {
  return __hip_atomic_load(gptr(p), __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}

/// The acquire half: after the last poll of a task's waits.
__device__ __forceinline__ void fenceAcquireAgent() {
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent");
}

/// The release half: before a task's relaxed increments. The fence is
/// buffer_wbl2 sc1 plus the compiler's wait; the explicit waitVmem makes the
/// wait for the write-back unconditional.
__device__ __forceinline__ void fenceReleaseAgent() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent");
  waitVmem();
}

/// Relaxed agent-scope add without using the result: a trigger after
/// fenceReleaseAgent.
__device__ __forceinline__ void addRelaxedAgent(unsigned long long *p,
                                                unsigned long long v) {
  (void)__hip_atomic_fetch_add(gptr(p), v, __ATOMIC_RELAXED,
                               __HIP_MEMORY_SCOPE_AGENT);
}

/// Release add (write-back and add in one call): for single triggers
/// outside the loop.
__device__ __forceinline__ void addReleaseAgent(unsigned long long *p,
                                                unsigned long long v) {
  (void)__hip_atomic_fetch_add(gptr(p), v, __ATOMIC_RELEASE,
                               __HIP_MEMORY_SCOPE_AGENT);
}

/// Relaxed agent-scope fetch-add: dynamic-mode tickets. Ticket order only
/// hands out work; the events order the data, so no ordering is needed.
__device__ __forceinline__ unsigned long long
fetchAddRelaxedAgent(unsigned long long *p, unsigned long long v) {
  return __hip_atomic_fetch_add(gptr(p), v, __ATOMIC_RELAXED,
                                __HIP_MEMORY_SCOPE_AGENT);
}

//--- Host-mapped memory, system scope ---------------------------------------//

__device__ __forceinline__ int32_t loadRelaxedSys(const volatile int32_t *p) {
  return __hip_atomic_load(gptr(const_cast<const int32_t *>(p)),
                           __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

__device__ __forceinline__ void storeRelaxedSys(int32_t *p, int32_t v) {
  __hip_atomic_store(gptr(p), v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

__device__ __forceinline__ void storeRelaxedSys(volatile int32_t *p,
                                                int32_t v) {
  storeRelaxedSys(const_cast<int32_t *>(p), v);
}

__device__ __forceinline__ void storeRelaxedSys(uint64_t *p, uint64_t v) {
  __hip_atomic_store(gptr(p), v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
}

} // namespace amd
} // namespace loom

#endif // LOOM_KERNELS_AMD_ATOMICS_H
