//===- Interpreter.h - The persistent worker loop for gfx950 -- -*- C++ -*-===//
//
// One workgroup per worker (one per CU), all co-resident
// (hipModuleLaunchCooperativeKernel). Each workgroup walks its task list
// (static mode) or takes tickets from one queue (dynamic mode); for each
// task one lane (thread 0) waits on the input events, the whole workgroup
// runs the body, and thread 0 triggers the output events. The memory-order
// protocol is in Atomics.h. Same contract as kernels/nvidia/Interpreter.cuh:
//
//   template <int kThreads, typename RunTask>
//   __device__ void loom::amd::loomPersistentLoop(
//       const LoomKernelArgs &args, const int32_t *workerBegin,
//       const int32_t *workerTasks, const int32_t *waitBegin,
//       const int32_t *waitEvents, const int32_t *triggerBegin,
//       const int32_t *triggerEvents, const int32_t *eventNeeds,
//       int32_t numTasks, int32_t numEvents, int32_t mode, RunTask runTask);
//   // runTask(int32_t task, const LoomKernelArgs &, char *lds) -> int32_t
//
// Dynamic mode: the queue is one more counter after the events,
// args.events[numEvents], so the runtime allocates num_events + 1 counters.
// Every worker ends its part of a launch with exactly one ticket past the
// end, so launch e takes exactly num_tasks + num_workers tickets and its
// tickets start at (e - 1) * (num_tasks + num_workers): the queue is never
// reset. Ticket t runs worker_tasks[t], a topological order, so a workgroup
// only ever waits on tasks whose tickets were taken earlier by running
// workgroups: no deadlock.
//
// A hang is never silent. A waiting thread 0 publishes (task, event, seen,
// needed) to args.status[worker] (host-mapped, system-scope stores) as soon
// as a wait is not immediately satisfied and then every kCheckCycles
// (s_memtime shader clocks, the unit of args.timeout_cycles on AMD) while it
// lasts; at those points it also reads *args.abort_flag and checks
// args.timeout_cycles (0 = no timeout). A workgroup that gives up, or whose
// body fails, records why in status.error, sets *abort_flag itself so the
// other workers leave at their next check, and returns. A finished worker
// has status.task == -1.
//
// A body that refuses a meta value (kernels/common/MetaGuard.h: a page id,
// kv_indptr, kv_lens, a cache slot or cu_seqlens out of range) records it
// in the workgroup's MetaFaultSlot (MetaFault.h) and reads or writes
// nothing through it; after the barrier that ends the body the task fails
// with LOOM_BODY_BAD_INDEX, status.seen = the value's address, status.needed
// = the value, status.meta_reason = the LoomMetaReason (the record takes
// precedence over the body's own error), as on NVIDIA.
//
// After a launch that did not finish (error, abort, timeout) the event and
// queue counters are inconsistent: the runtime must zero all num_events + 1
// counters and restart epochs at 1 before the next launch.
//
// Waiting: only thread 0 polls; the other 255 threads (and thread 0's own
// wave-mates, masked off by exec) sit in s_barrier, which costs no issue
// slots. The poll backs off with s_sleep (4 free polls, then 64, 128, ...
// up to 1024 clocks between polls): the cap bounds the latency a satisfied
// wait adds to the critical path (~0.4 us at 2.4 GHz).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_AMD_INTERPRETER_H
#define LOOM_KERNELS_AMD_INTERPRETER_H

#include "kernels/amd/Atomics.h"
#include "kernels/amd/HipDevice.h"
#include "kernels/amd/MetaFault.h"
#include "kernels/common/DeviceAbi.h"

#include <cstdint>

namespace loom {
namespace amd {

/// status.error of a worker that left a wait because *abort_flag was set.
constexpr int32_t kWorkerAborted = -1;
/// status.error of a worker whose wait exceeded args.timeout_cycles.
constexpr int32_t kWorkerTimedOut = -2;

/// Clock cycles between status publications / abort-flag reads while a wait
/// lasts (~1.7 ms at 2.4 GHz). Each one is a PCIe round trip, and on the
/// H200 such reads by many waiting blocks every ~33 us made the working
/// blocks 5-40x slower, none from ~0.5 ms up (kernels/nvidia/Interpreter.cuh,
/// which checks every 2^22 cycles since). Taken over unmeasured: no MI350X
/// has run this loop. Abort and timeout are noticed this much later.
constexpr uint64_t kCheckCycles = 1ull << 22;
/// Polls without sleeping before the backoff starts, and the last backoff
/// level (s_sleep 2^level, i.e. 64 * 2^level clocks; sleepLevel).
constexpr int kSpinPolls = 4;
constexpr int kMaxSleepLevel = 4;

namespace detail {

__device__ __forceinline__ void publishWait(LoomWorkerStatus *s, int32_t task,
                                            int32_t event,
                                            unsigned long long seen,
                                            unsigned long long needed) {
  storeRelaxedSys(&s->task, task);
  storeRelaxedSys(&s->event, event);
  storeRelaxedSys(&s->seen, uint64_t(seen));
  storeRelaxedSys(&s->needed, uint64_t(needed));
}

__device__ __forceinline__ void publishError(LoomWorkerStatus *s,
                                             int32_t error) {
  storeRelaxedSys(&s->error, error);
}

/// Tells every other worker to leave at its next check.
__device__ __forceinline__ void raiseAbort(const LoomKernelArgs &args) {
  storeRelaxedSys(args.abort_flag, 1);
}

/// Thread 0, after task `task`'s body failed (`error`) or refused a meta
/// value (the workgroup's MetaFaultSlot, which takes precedence): publishes
/// why and raises the abort flag. Inlined like everything in the kernel (a
/// call would bring the stack ABI and scratch).
__device__ __forceinline__ void failTask(const LoomKernelArgs &args,
                                      LoomWorkerStatus *s, int32_t task,
                                      int32_t error) {
  const MetaFaultSlot &slot = metaFaultSlot();
  if (slot.taken) {
    publishWait(s, task, -1,
                reinterpret_cast<unsigned long long>(slot.fault.where),
                static_cast<unsigned long long>(slot.fault.value));
    storeRelaxedSys(&s->meta_reason, slot.fault.reason);
    error = LOOM_BODY_BAD_INDEX;
  } else {
    publishWait(s, task, -1, 0, 0);
  }
  publishError(s, error);
  raiseAbort(args);
}

/// Thread 0: waits until `event` reaches `needed`. Returns 0, or
/// kWorkerAborted / kWorkerTimedOut after publishing the status.
__device__ __forceinline__ int32_t awaitEvent(const LoomKernelArgs &args,
                                              LoomWorkerStatus *status,
                                              int32_t task, int32_t event,
                                              unsigned long long needed) {
  const unsigned long long *counter = args.events + event;
  unsigned long long seen = loadRelaxedAgent(counter);
  if (seen >= needed)
    return 0;
  publishWait(status, task, event, seen, needed);
  const uint64_t start = clock64();
  uint64_t nextCheck = start + kCheckCycles;
  int level = 0;
  for (int poll = 1;; ++poll) {
    if (poll > kSpinPolls) {
      sleepLevel(level);
      level = level < kMaxSleepLevel ? level + 1 : kMaxSleepLevel;
    }
    seen = loadRelaxedAgent(counter);
    if (seen >= needed)
      return 0;
    const uint64_t now = clock64();
    if (now < nextCheck)
      continue;
    nextCheck = now + kCheckCycles;
    storeRelaxedSys(&status->seen, uint64_t(seen));
    if (loadRelaxedSys(args.abort_flag) != 0) {
      publishError(status, kWorkerAborted);
      return kWorkerAborted;
    }
    if (args.timeout_cycles != 0 && now - start > args.timeout_cycles) {
      publishError(status, kWorkerTimedOut);
      raiseAbort(args);
      return kWorkerTimedOut;
    }
  }
}

} // namespace detail

/// The worker loop; call it from the kernel with every thread of the
/// workgroup (workgroup size == kThreads, a multiple of 64; one workgroup
/// per worker, grid == num_workers workgroups). `runTask(task, args, lds)`
/// is called by all threads with the dynamic LDS; it returns 0 or an error
/// code (workgroup-uniform or not: any non-zero value of any thread counts).
/// The tables are the program's (ProgramAbi.h) in device memory;
/// `numEvents` locates the dynamic-mode queue counter at
/// args.events[numEvents].
template <int kThreads, typename RunTask>
__device__ __forceinline__ void
loomPersistentLoop(const LoomKernelArgs &args, const int32_t *workerBegin,
                   const int32_t *workerTasks, const int32_t *waitBegin,
                   const int32_t *waitEvents, const int32_t *triggerBegin,
                   const int32_t *triggerEvents, const int32_t *eventNeeds,
                   int32_t numTasks, int32_t numEvents, int32_t mode,
                   RunTask runTask) {
  static_assert(kThreads % kWaveSize == 0, "whole waves");
  // The dynamic LDS the launch gave (EmitHip: the chip's LDS per workgroup
  // less a reserve for static LDS such as the loop state below).
  extern __shared__ __attribute__((aligned(16))) char loomDynamicLds[];
  // The loop's state lives in LDS, not in registers: the bodies are inlined
  // into this loop, and every scalar the loop kept live across them (the
  // arguments, the tables, the list position: ~45 SGPRs) would be taken
  // from the 102 the bodies have. Thread 0 re-reads what it needs per task
  // (LDS reads are not hoisted across the loop's barriers).
  struct LoopState {
    LoomKernelArgs args;
    const int32_t *workerTasks, *waitBegin, *waitEvents, *triggerBegin,
        *triggerEvents, *eventNeeds;
    unsigned long long ticketBase;
    int32_t pos, end, numTasks, numEvents, dynamic;
    int32_t task;  // next task, -1: none left
    int32_t wait;  // 0, or why thread 0 gave up waiting
    int32_t error; // a body's non-zero return
  };
  __shared__ LoopState st;

  const bool leader = threadId() == 0;
  if (leader) {
    const int32_t worker = static_cast<int32_t>(blockId());
    const bool dynamic = mode == LOOM_SCHEDULE_DYNAMIC;
    st.args = args;
    st.workerTasks = workerTasks;
    st.waitBegin = waitBegin;
    st.waitEvents = waitEvents;
    st.triggerBegin = triggerBegin;
    st.triggerEvents = triggerEvents;
    st.eventNeeds = eventNeeds;
    st.ticketBase = (args.epoch - 1) * static_cast<unsigned long long>(
                                           numTasks + int32_t(gridDimX()));
    st.pos = dynamic ? 0 : *gptr(workerBegin + worker);
    st.end = dynamic ? 0 : *gptr(workerBegin + worker + 1);
    st.numTasks = numTasks;
    st.numEvents = numEvents;
    st.dynamic = dynamic;
    st.error = 0;
    if (kCheckMeta) // before the first barrier: no body has run yet
      metaFaultSlot().taken = 0;
  }

  for (;;) {
    // Thread 0 picks the task and waits for its inputs. st.task / st.wait
    // are rewritten only after the barrier that ends the previous body,
    // which every thread passes after reading them.
    if (leader) {
      const LoomKernelArgs &a = st.args;
      LoomWorkerStatus *status = a.status + blockId();
      int32_t task = -1;
      if (st.dynamic) {
        const unsigned long long ticket =
            fetchAddRelaxedAgent(a.events + st.numEvents, 1) - st.ticketBase;
        if (ticket < static_cast<unsigned long long>(st.numTasks))
          task = *gptr(st.workerTasks + ticket);
      } else if (st.pos < st.end) {
        task = *gptr(st.workerTasks + st.pos);
        st.pos = st.pos + 1;
      }
      int32_t wait = 0;
      if (task >= 0) {
        // The tables are in device memory: global_load (gptr), not flat.
        const LOOM_GLOBAL int32_t *waitBeginT = gptr(st.waitBegin),
                                  *waitEventsT = gptr(st.waitEvents),
                                  *needsT = gptr(st.eventNeeds);
        for (int32_t i = waitBeginT[task]; i < waitBeginT[task + 1] && !wait;
             ++i) {
          const int32_t e = waitEventsT[i];
          wait = detail::awaitEvent(
              a, status, task, e,
              a.epoch * static_cast<unsigned long long>(needsT[e]));
        }
        if (!wait)
          fenceAcquireAgent(); // buffer_inv sc1: producers' stores visible
      }
      st.task = task;
      st.wait = wait;
    }
    syncThreads();
    const int32_t task = uniform(st.task);
    if (task < 0)
      break;
    if (uniform(st.wait) != 0)
      return; // status already says where and why

    // The body reads the arguments from LDS as well; its two pointers are
    // made opaque (am::opaque) so that no body's address arithmetic is
    // hoisted out of this loop either.
    LoomKernelArgs taskArgs = st.args;
    opaque(taskArgs.bindings);
    opaque(taskArgs.workspace);
    const int32_t err = runTask(task, taskArgs, loomDynamicLds);
    if (err != 0)
      st.error = err; // any failing thread; the barrier publishes it
    // Ends the body: this wave's stores have completed (Atomics.h, step 1),
    // every wave's stores are ordered before thread 0's release below, and
    // no wave still uses the LDS. A refused meta value (MetaFault.h) fails
    // the task too; its record is read after this barrier, which ends its
    // writes (loomc --trust-meta: no record).
    waitVmem();
    syncThreads();
    if ((uniform(st.error) |
         (kCheckMeta ? uniform(metaFaultSlot().taken) : 0)) != 0) {
      if (leader)
        detail::failTask(st.args, st.args.status + blockId(), task, st.error);
      return;
    }
    if (leader) {
      const LOOM_GLOBAL int32_t *triggerBeginT = gptr(st.triggerBegin),
                                *triggerEventsT = gptr(st.triggerEvents);
      const int32_t tb = triggerBeginT[task], te = triggerBeginT[task + 1];
      if (tb < te) {
        unsigned long long *events = st.args.events;
        fenceReleaseAgent(); // buffer_wbl2 sc1; s_waitcnt vmcnt(0)
        for (int32_t i = tb; i < te; ++i)
          addRelaxedAgent(events + triggerEventsT[i], 1);
      }
    }
  }
  if (leader) {
    LoomWorkerStatus *status = st.args.status + blockId();
    detail::publishWait(status, -1, -1, 0, 0);
    detail::publishError(status, 0);
  }
}

} // namespace amd
} // namespace loom

#endif // LOOM_KERNELS_AMD_INTERPRETER_H
