//===- Interpreter.cuh - The persistent worker loop --------------*- CUDA
//-*-===//
//
// One block per worker, all co-resident (cooperative launch). Each block
// walks its task list (static mode) or takes tickets from one queue (dynamic
// mode); for each task thread 0 waits on the input events, the whole block
// runs the body, and thread 0 triggers the output events. The memory-order
// protocol is in Atomics.cuh.
//
// Dynamic mode: the queue is one more counter after the events,
// args.events[numEvents], so the runtime allocates num_events + 1 counters.
// Like the host backend (runtime/host/Worker.cpp), every worker ends its part
// of a launch with exactly one ticket past the end, so launch e takes exactly
// num_tasks + num_workers tickets and its tickets start at
// (e - 1) * (num_tasks + num_workers): the queue is never reset. Ticket t
// runs worker_tasks[t], a topological order, so a block only ever waits on
// tasks whose tickets were taken earlier by running blocks: no deadlock.
//
// A hang is never silent. A waiting thread 0 publishes (task, event, seen,
// needed) to args.status[worker] (host-mapped) as soon as a wait is not
// immediately satisfied and then every kCheckCycles while it lasts; at those
// points it also reads *args.abort_flag and checks args.timeout_cycles
// (0 = no timeout). A block that gives up, or whose body fails, records why
// in status.error, sets *abort_flag itself so the other workers leave at
// their next check instead of running into their own timeouts, and returns.
// A finished worker has status.task == -1.
//
// After a launch that did not finish (error, abort, timeout) the event and
// queue counters are inconsistent: the runtime must zero all
// num_events + 1 counters and restart epochs at 1 before the next launch.
//
// Per-task timing (DeviceAbi.h, LoomTaskTiming): loomProfiledLoop is the
// same loop with thread 0 reading %globaltimer when it takes a task, when
// the task's inputs are ready and when its body has ended (before its
// triggers), and storing one
// record per task (and one per worker: entry and exit) into args.profile
// (skipped when that is null). `loomc --profile` emits it instead of
// loomPersistentLoop, so an ordinary build carries none of it. The cost is
// three timer reads and one 32-byte store per task, on thread 0 only. The
// timer is the GPU's global nanosecond clock, the same on every SM, so
// records of different workers line up; its update period is the
// hardware's (the trace summary prints the step it observed).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_INTERPRETER_CUH
#define LOOM_KERNELS_NVIDIA_INTERPRETER_CUH

#include "kernels/common/DeviceAbi.h"
#include "kernels/nvidia/Atomics.cuh"

#include <cstdint>

namespace loom {
namespace nvidia {

/// status.error of a worker that left a wait because *abort_flag was set.
constexpr int32_t kWorkerAborted = -1;
/// status.error of a worker whose wait exceeded args.timeout_cycles.
constexpr int32_t kWorkerTimedOut = -2;

/// Clock cycles between status publications / abort-flag reads while a wait
/// lasts (~2 ms at 1.98 GHz). Each one is a PCIe round trip, and they are
/// not free for the blocks that work: at 2^16 cycles (~33 us), 68 blocks
/// waiting out phase 0 of an MLA decode (batch 1, 8192 tokens, 128 heads)
/// made about 30 of the 64 working blocks 5-40x slower on the H200 (6.2 ms
/// instead of 0.15 ms, and a different 30 from run to run); from 2^20 up,
/// no block was slowed. Abort and timeout are noticed this much later.
constexpr long long kCheckCycles = 1 << 22;
/// Polls without sleeping before the backoff starts, and the sleep cap (ns).
/// The cap bounds the latency a satisfied wait adds to the critical path.
constexpr int kSpinPolls = 4;
constexpr unsigned kMaxSleepNs = 256;

#ifndef LOOM_STATUS_EVERY_TASK
/// 1: thread 0 also publishes (task, event = -1) before every body, so a
/// body that never returns shows in the status (costs one posted PCIe write
/// per task).
#define LOOM_STATUS_EVERY_TASK 0
#endif

#ifndef LOOM_PREFETCH_TABLES
/// 1: the emitted kernel first prefetches its task tables into L2, when they
/// are small (targets/common/DeviceEmitter, kPrefetchTableBytes): after a
/// cold start each task's table walk (task id, its waits, their events and
/// needs, then its triggers) is a chain of dependent DRAM reads on thread 0,
/// before and after every body. An experiment (scripts/bench-ab), not yet
/// run on a GPU.
#define LOOM_PREFETCH_TABLES 0
#endif

/// Every thread of the block: the 128-byte lines of each array (the emitted
/// `__device__` tables, by reference, so their sizes are known) into L2.
/// Prefetches do not block; the loop then finds the lines in L2.
template <int kThreads, typename... Arrays>
__device__ __forceinline__ void prefetchTablesL2(const Arrays &...arrays) {
  auto lines = [](const void *p, size_t bytes) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(127);
    const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
    for (uintptr_t a = first + uintptr_t(threadIdx.x) * 128; a < end;
         a += uintptr_t(kThreads) * 128)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
  };
  (lines(&arrays, sizeof(Arrays)), ...);
}

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

/// Thread 0: waits until `event` reaches `needed`. Returns 0, or
/// kWorkerAborted / kWorkerTimedOut after publishing the status.
__device__ inline int32_t awaitEvent(const LoomKernelArgs &args,
                                     LoomWorkerStatus *status, int32_t task,
                                     int32_t event, unsigned long long needed) {
  const unsigned long long *counter = args.events + event;
  unsigned long long seen = loadRelaxedGpu(counter);
  if (seen >= needed)
    return 0;
  publishWait(status, task, event, seen, needed);
  const long long start = clock64();
  long long nextCheck = start + kCheckCycles;
  unsigned sleepNs = 32;
  for (int poll = 1;; ++poll) {
    if (poll > kSpinPolls) {
      __nanosleep(sleepNs);
      sleepNs = sleepNs < kMaxSleepNs ? 2 * sleepNs : kMaxSleepNs;
    }
    seen = loadRelaxedGpu(counter);
    if (seen >= needed)
      return 0;
    const long long now = clock64();
    if (now < nextCheck)
      continue;
    nextCheck = now + kCheckCycles;
    storeRelaxedSys(&status->seen, uint64_t(seen));
    if (loadRelaxedSys(args.abort_flag) != 0) {
      publishError(status, kWorkerAborted);
      return kWorkerAborted;
    }
    if (args.timeout_cycles != 0 &&
        static_cast<unsigned long long>(now - start) > args.timeout_cycles) {
      publishError(status, kWorkerTimedOut);
      raiseAbort(args);
      return kWorkerTimedOut;
    }
  }
}

/// The GPU's global timer (ns), the same on every SM.
__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void storeTiming(LoomTaskTiming *at, uint64_t pick,
                                            uint64_t start, uint64_t end,
                                            int32_t worker, uint64_t epoch) {
  at->pick = pick;
  at->start = start;
  at->end = end;
  at->worker = worker;
  at->epoch = static_cast<uint32_t>(epoch);
}

/// loomPersistentLoop's body; kProfile adds the timing records.
template <int kThreads, bool kProfile, typename RunTask>
__device__ void
workerLoop(const LoomKernelArgs &args, const int32_t *workerBegin,
           const int32_t *workerTasks, const int32_t *waitBegin,
           const int32_t *waitEvents, const int32_t *triggerBegin,
           const int32_t *triggerEvents, const int32_t *eventNeeds,
           int32_t numTasks, int32_t numEvents, int32_t mode,
           RunTask runTask) {
  extern __shared__ __align__(128) char loomDynamicSmem[];
  __shared__ int32_t sTask;  // next task, -1: none left
  __shared__ int32_t sWait;  // 0, or why thread 0 gave up waiting
  __shared__ int32_t sError; // a body's non-zero return

  const int32_t worker = static_cast<int32_t>(blockIdx.x);
  LoomWorkerStatus *status = args.status + worker;
  const bool leader = threadIdx.x == 0;
  const bool dynamic = mode == LOOM_SCHEDULE_DYNAMIC;
  int32_t pos = dynamic ? 0 : workerBegin[worker];
  const int32_t end = dynamic ? 0 : workerBegin[worker + 1];
  unsigned long long *queue = args.events + numEvents;
  const unsigned long long ticketBase =
      (args.epoch - 1) * static_cast<unsigned long long>(numTasks + gridDim.x);
  if (leader)
    sError = 0;
  // Thread 0's timing of the task in hand (kProfile only).
  LoomTaskTiming *const profile = kProfile ? args.profile : nullptr;
  uint64_t entryNs = 0, pickNs = 0, startNs = 0;
  if (kProfile && leader && profile)
    entryNs = globalTimerNs();

  for (;;) {
    // Thread 0 picks the task and waits for its inputs. sTask/sWait are
    // rewritten only after the barrier that ends the previous body, which
    // every thread passes after reading them.
    if (leader) {
      int32_t task = -1;
      if (dynamic) {
        unsigned long long ticket = fetchAddRelaxedGpu(queue, 1) - ticketBase;
        if (ticket < static_cast<unsigned long long>(numTasks))
          task = workerTasks[ticket];
      } else if (pos < end) {
        task = workerTasks[pos++];
      }
      int32_t wait = 0;
      if (kProfile && profile)
        pickNs = globalTimerNs();
      if (task >= 0) {
        for (int32_t i = waitBegin[task]; i < waitBegin[task + 1] && !wait;
             ++i) {
          int32_t e = waitEvents[i];
          wait = awaitEvent(
              args, status, task, e,
              args.epoch * static_cast<unsigned long long>(eventNeeds[e]));
        }
        if (!wait)
          fenceAcqRelGpu(); // acquire: the producers' stores are visible
        if (kProfile && profile)
          startNs = globalTimerNs();
#if LOOM_STATUS_EVERY_TASK
        if (!wait)
          publishWait(status, task, -1, 0, 0);
#endif
      }
      sTask = task;
      sWait = wait;
    }
    __syncthreads();
    const int32_t task = sTask;
    if (task < 0)
      break;
    if (sWait != 0)
      return; // status already says where and why

    const int32_t err = runTask(task, args, loomDynamicSmem);
    if (err != 0)
      sError = err;
    // Ends the body: every thread's stores are ordered before thread 0's
    // release below, and no thread still uses the shared memory.
    if (__syncthreads_or(err != 0)) {
      if (leader) {
        publishWait(status, task, -1, 0, 0);
        publishError(status, sError);
        raiseAbort(args);
      }
      return;
    }
    if (leader) {
      // The body's end, read before the triggers: a consumer released by
      // them starts after it, so records never show an effect before its
      // cause.
      if (kProfile && profile)
        storeTiming(profile + task, pickNs, startNs, globalTimerNs(), worker,
                    args.epoch);
      const int32_t tb = triggerBegin[task], te = triggerBegin[task + 1];
      if (tb < te) {
        fenceAcqRelGpu(); // release: the body's stores before the adds
        for (int32_t i = tb; i < te; ++i)
          redAddRelaxedGpu(args.events + triggerEvents[i], 1);
      }
    }
  }
  if (leader) {
    if (kProfile && profile)
      storeTiming(profile + numTasks + worker, entryNs, entryNs,
                  globalTimerNs(), worker, args.epoch);
    publishWait(status, -1, -1, 0, 0);
    publishError(status, 0);
  }
}

} // namespace detail

/// The worker loop; call it from the kernel with every thread of the block
/// (blockDim.x == kThreads, one block per worker, gridDim.x == num_workers).
/// `runTask(task, args, smem)` is called by all threads of the block with the
/// dynamic shared memory; it returns 0 or an error code (block-uniform or
/// not: any non-zero value of any thread counts). The tables are the
/// program's (ProgramAbi.h) in device memory; `numEvents` locates the
/// dynamic-mode queue counter at args.events[numEvents].
template <int kThreads, typename RunTask>
__device__ __forceinline__ void
loomPersistentLoop(const LoomKernelArgs &args, const int32_t *workerBegin,
                   const int32_t *workerTasks, const int32_t *waitBegin,
                   const int32_t *waitEvents, const int32_t *triggerBegin,
                   const int32_t *triggerEvents, const int32_t *eventNeeds,
                   int32_t numTasks, int32_t numEvents, int32_t mode,
                   RunTask runTask) {
  detail::workerLoop<kThreads, false>(
      args, workerBegin, workerTasks, waitBegin, waitEvents, triggerBegin,
      triggerEvents, eventNeeds, numTasks, numEvents, mode, runTask);
}

/// loomPersistentLoop that also records per-task timings into args.profile
/// (when it is not null); what `loomc --profile` emits.
template <int kThreads, typename RunTask>
__device__ __forceinline__ void
loomProfiledLoop(const LoomKernelArgs &args, const int32_t *workerBegin,
                 const int32_t *workerTasks, const int32_t *waitBegin,
                 const int32_t *waitEvents, const int32_t *triggerBegin,
                 const int32_t *triggerEvents, const int32_t *eventNeeds,
                 int32_t numTasks, int32_t numEvents, int32_t mode,
                 RunTask runTask) {
  detail::workerLoop<kThreads, true>(
      args, workerBegin, workerTasks, waitBegin, waitEvents, triggerBegin,
      triggerEvents, eventNeeds, numTasks, numEvents, mode, runTask);
}

} // namespace nvidia
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_INTERPRETER_CUH
