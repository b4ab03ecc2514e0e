//===- Interpreter.cuh - The persistent worker loop --------------*- CUDA -*-===//
//
// One block per worker, all co-resident (cooperative launch). Thread 0, the
// leader, walks the worker's schedule, waits for each task's input events,
// and after the whole block has run the task's body, triggers its output
// events. The memory-order protocol is in Atomics.cuh.
//
// The schedule is packed records (kernels/common/WorkerRecords.h). In
// static mode the first warp copies its worker's first kWindowWords of
// records into shared memory at entry (the leader copies the next window
// with cp.async.bulk when the walk reaches its end), so a task's id, tile,
// waits, triggers and prefetches are shared-memory reads. Dynamic mode
// takes tickets from one queue counter and reads ticket t's record from
// global memory. A task whose first runtime row is at or past the run's
// leading size has no work: it only triggers.
//
// Prefetch (static mode, an experiment: loomc --l2-prefetch, off by
// default because it measured slower, bench/engine/README.md): records may
// name byte ranges their bodies read whatever the events say (a linear's
// weight rows). The leader brings the next tasks' ranges into L2
// (cp.async.bulk.prefetch.L2) while a body runs, and a task's own while it
// waits for its inputs, at most `prefetchBudget` bytes not yet used.
//
// Memory order: waits poll with acquire loads (a task with no waits has
// none, nor a wait whose count this worker has seen before); one trigger is
// a release add, several share one fence.
//
// A hang is never silent, and a healthy launch writes nothing to the host.
// A wait publishes (task, event, seen, needed) to args.status[worker]
// (host-mapped) once it has lasted kQuietCycles, then refreshes `seen`
// every kCheckCycles; at those points it reads *args.abort_flag and checks
// args.timeout_cycles (0 = no timeout). A worker that gives up, or whose
// body fails, records why in status.error, sets *abort_flag and
// control[LOOM_CONTROL_FAILED] so the other workers (and later launches)
// leave, and returns. A launch that ends with no error record succeeded.
//
// Launch numbers (DeviceAbi.h): args.epoch (the runtime's own launches:
// no control word is read or written), or when it is 0 the launches this
// worker completed (its word of args.control) + 1, stored back as it
// leaves, so launches back to back on a stream or in a CUDA graph need no
// host in between. After a launch that did not finish the counters are
// inconsistent: the runtime must zero the events, the queue and the
// control words, and restart epochs at 1.
//
// Dynamic mode: the queue is the counter args.events[numEvents]. Every
// worker ends its part of a launch with exactly one ticket past the end, so
// launch e takes num_tasks + num_workers tickets from (e - 1) * (num_tasks
// + num_workers): the queue is never reset. Tickets run in a topological
// order, so a block only waits on tasks that running blocks took: no
// deadlock.
//
// Per-task timing (DeviceAbi.h, LoomTaskTiming): loomProfiledLoop is the
// same loop with the leader reading %globaltimer when it takes a task, when
// the task's inputs are ready and when its body has ended (before its
// triggers), one record per task and one per worker (entry and exit).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_NVIDIA_INTERPRETER_CUH
#define LOOM_KERNELS_NVIDIA_INTERPRETER_CUH

#include "kernels/common/DeviceAbi.h"
#include "kernels/common/WorkerRecords.h"
#include "kernels/nvidia/Atomics.cuh"
#include "kernels/nvidia/BulkCopy.cuh"

#include <cstdint>

namespace loom {
namespace nvidia {

/// status.error of a worker that left a wait because *abort_flag was set.
constexpr int32_t kWorkerAborted = -1;
/// status.error of a worker whose wait exceeded args.timeout_cycles.
constexpr int32_t kWorkerTimedOut = -2;

/// A wait this many clock cycles long (~0.5 ms at 1.98 GHz) publishes
/// itself; shorter ones stay off the PCIe bus.
constexpr long long kQuietCycles = 1 << 20;
/// Then, between status refreshes / abort-flag reads (~2 ms). Each one is a
/// PCIe round trip, and they are not free for the blocks that work: at
/// 2^16 cycles, 68 waiting blocks made about 30 working ones 5-40x slower on
/// the H200; from 2^20 up, none. Abort and timeout are noticed this late.
constexpr long long kCheckCycles = 1 << 22;
/// Clock cycles a wait polls without sleeping (~1 ms) before the backoff
/// starts, and the sleep cap (ns), which bounds the latency a satisfied
/// wait adds to the critical path. Polls cost one L2 read each and nothing
/// else runs on a waiting worker's SM, so waits of a launch's length spin:
/// a sleeping worker adds up to the cap (and its wake-up) to every hop.
constexpr long long kSpinCycles = 1 << 21;
constexpr unsigned kMaxSleepNs = 256;

/// What the emitted kernel hands the loop (WorkerRecords.h).
struct EngineSchedule {
  const int32_t *records;
  const int32_t *queueOffsets; ///< dynamic mode: ticket -> record
  int32_t stride;              ///< static mode: words per worker
  int32_t numTasks;
  int32_t numEvents;
  int32_t mode;            ///< LoomScheduleMode
  int32_t maxRecordWords;  ///< <= kWindowWords - (kAlignWords - 1)
  int32_t numBindings;     ///< <= kBindings when prefetchBudget > 0
  uint32_t prefetchBudget; ///< bytes ahead of the task in hand; 0: none
  /// The binding whose dims[0] is the runtime size records' first rows
  /// compare with (WorkerRecords.h); -1: every task has work.
  int32_t runtimeBinding;
};

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

/// Records a failure where the host and every later launch see it, and
/// tells the other workers to leave at their next check.
__device__ __forceinline__ void fail(const LoomKernelArgs &args,
                                     LoomWorkerStatus *s, int32_t error) {
  storeRelaxedSys(&s->error, error);
  storeRelaxedSys(args.abort_flag, 1);
  if (args.control)
    storeRelaxedGpu(args.control + LOOM_CONTROL_FAILED, 1ull);
}

/// The counts a worker's leader has seen (acquired) per event, direct-mapped:
/// counters only grow, so a later wait for a count at most one seen is over
/// without a load, and the acquire that saw it already orders what follows.
/// A decoder's consecutive tiles of one op wait on the same events.
struct SeenCounts {
  static constexpr int kSlots = 64;
  int32_t event[kSlots];
  unsigned long long count[kSlots];

  __device__ void clear() {
    for (int i = 0; i < kSlots; ++i)
      event[i] = -1;
  }
  __device__ bool covers(int32_t e, unsigned long long needed) const {
    const int i = e % kSlots;
    return event[i] == e && count[i] >= needed;
  }
  __device__ void note(int32_t e, unsigned long long seen) {
    const int i = e % kSlots;
    event[i] = e;
    count[i] = seen;
  }
};

/// Leader: waits until `event` reaches `needed`; the load that sees it is
/// an acquire (it synchronizes with every producer's release add before
/// it). Calls `blocked()` once if the first poll falls short. Returns 0, or
/// kWorkerAborted / kWorkerTimedOut after publishing the status.
template <typename Blocked>
__device__ inline int32_t awaitEvent(const LoomKernelArgs &args,
                                     LoomWorkerStatus *status, int32_t task,
                                     int32_t event, unsigned long long needed,
                                     SeenCounts &seenCounts, Blocked blocked) {
  if (seenCounts.covers(event, needed))
    return 0;
  const unsigned long long *counter = args.events + event;
  unsigned long long seen = loadAcquireGpu(counter);
  if (seen >= needed) {
    seenCounts.note(event, seen);
    return 0;
  }
  blocked();
  const long long start = clock64();
  long long nextCheck = start + kQuietCycles;
  bool published = false;
  unsigned sleepNs = 32;
  for (long long now = start;;) {
    if (now - start > kSpinCycles) {
      __nanosleep(sleepNs);
      sleepNs = sleepNs < kMaxSleepNs ? 2 * sleepNs : kMaxSleepNs;
    }
    seen = loadAcquireGpu(counter);
    if (seen >= needed) {
      seenCounts.note(event, seen);
      return 0;
    }
    now = clock64();
    if (now < nextCheck)
      continue;
    nextCheck = now + kCheckCycles;
    if (!published) {
      publishWait(status, task, event, seen, needed);
      published = true;
    } else {
      storeRelaxedSys(&status->seen, uint64_t(seen));
    }
    if (loadRelaxedSys(args.abort_flag) != 0) {
      fail(args, status, kWorkerAborted);
      return kWorkerAborted;
    }
    if (args.timeout_cycles != 0 &&
        static_cast<unsigned long long>(now - start) > args.timeout_cycles) {
      fail(args, status, kWorkerTimedOut);
      return kWorkerTimedOut;
    }
  }
}

/// Leader: adds 1 to each event `rec` triggers. Release: the block's
/// stores (ordered before by a barrier) happen before the adds; a task
/// without work has none and triggers relaxed.
__device__ __forceinline__ void triggerAll(const LoomKernelArgs &args,
                                           const int32_t *rec, bool release) {
  const int32_t triggers = records::numTriggers(rec[3]);
  const int32_t *t = records::triggersOf(rec);
  if (release && triggers == 1) {
    redAddReleaseGpu(args.events + t[0], 1);
    return;
  }
  if (release && triggers > 1)
    fenceAcqRelGpu(); // one fence for all of the task's adds
  for (int32_t i = 0; i < triggers; ++i)
    redAddRelaxedGpu(args.events + t[i], 1);
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

/// Where a worker's records come from and where its window lives.
template <int kWindowWords> struct RecordSource {
  int32_t *words;  // shared, kWindowWords
  uint64_t *bar;   // shared mbarrier of the bulk copy
  const int32_t *list;
  int32_t listWords;
};

/// The leader's view of its worker's records in static mode: words
/// [base, end) of its list are in the shared window.
struct RecordWindow {
  int32_t base, end;
  uint32_t phase;
  int32_t ready; // the mbarrier is initialised (at the first copy)

  /// Copies words [from, from + kWindowWords) (or to the list's end).
  template <int kWindowWords>
  __device__ void load(int32_t from, const RecordSource<kWindowWords> &src) {
    if (!ready) {
      mbarrierInit(src.bar, 1);
      ready = 1;
    }
    from &= ~(records::kAlignWords - 1);
    const int32_t n = min(kWindowWords, src.listWords - from);
    fenceProxyAsyncShared(); // the generic reads of the old window first
    mbarrierArriveExpectTx(src.bar, uint32_t(n) * 4u);
    bulkCopyToShared(src.words, src.list + from, uint32_t(n) * 4u, src.bar);
    mbarrierWait(src.bar, phase);
    phase ^= 1u;
    base = from;
    end = from + n;
  }

  /// The window offset of the record at list offset `at`, loading the
  /// window again when it might not hold the whole record.
  template <int kWindowWords>
  __device__ int32_t at(int32_t at, int32_t maxRecordWords,
                        const RecordSource<kWindowWords> &src) {
    if (at + maxRecordWords > end && end < src.listWords)
      load(at, src);
    return at - base;
  }
};

/// L2 prefetches of the records' ranges (static mode): those after the task
/// in hand while it runs, and its own when it has to wait for an event;
/// at most `budget` bytes issued for tasks not yet done.
struct Prefetcher {
  const uint64_t *bindingData; // shared: the bindings' base addresses
  uint32_t budget;
  int32_t first;  // records [first, cursor) are issued and not yet done
  int32_t cursor;
  uint32_t ahead; // their bytes

  /// Issues rows of `rec`'s ranges while under budget; returns the bytes.
  __device__ uint32_t issue(const int32_t *rec) {
    const int32_t counts = rec[3];
    const int32_t *p = records::prefetchesOf(rec);
    uint32_t issued = 0;
    // Kept until read: a body streaming other weights meanwhile would
    // otherwise evict lines brought in for later.
    const uint64_t policy = l2EvictLastPolicy();
    for (int32_t i = 0; i < records::numPrefetches(counts);
         ++i, p += records::kPrefetchWords) {
      if (bindingData[p[0]] == 0)
        continue;
      const char *at = reinterpret_cast<const char *>(bindingData[p[0]]) +
                       ((int64_t(uint32_t(p[2])) << 32) | uint32_t(p[1]));
      const uint32_t rowBytes = uint32_t(p[3]);
      for (int32_t r = 0; r < p[4]; ++r, at += p[5]) {
        if (ahead + issued >= budget)
          return issued;
        const uint32_t n = min(rowBytes, budget - ahead - issued + 15u) & ~15u;
        bulkPrefetchL2(at, n, policy);
        issued += n;
      }
    }
    return issued;
  }

  /// Issues the records from list offset `from` on, as far as the window
  /// holds them and the budget goes.
  template <int kWindowWords>
  __device__ void from(int32_t at, const RecordWindow &w,
                       const RecordSource<kWindowWords> &src) {
    if (cursor < at) {
      first = cursor = at;
      ahead = 0;
    }
    while (ahead < budget && cursor + records::kHeaderWords <= w.end) {
      const int32_t *rec = src.words + (cursor - w.base);
      if (rec[0] == records::kEndOfList ||
          cursor + records::recordWords(rec[3]) > w.end)
        return;
      ahead += issue(rec);
      cursor += records::recordWords(rec[3]);
    }
  }

  /// The task at list offset `task` is done: its bytes no longer count.
  __device__ void done(int32_t task, const int32_t *rec) {
    if (task < first || task >= cursor)
      return;
    const int32_t counts = rec[3];
    const int32_t *p = records::prefetchesOf(rec);
    uint32_t bytes = 0;
    for (int32_t i = 0; i < records::numPrefetches(counts);
         ++i, p += records::kPrefetchWords)
      bytes += uint32_t(p[3]) * uint32_t(p[4]);
    ahead = ahead > bytes ? ahead - bytes : 0;
    first = task + records::recordWords(counts);
  }
};

/// loomPersistentLoop's body; kProfile adds the timing records.
template <int kThreads, int kWindowWords, int kBindings, bool kProfile,
          typename RunTask>
__device__ void workerLoop(const LoomKernelArgs &args,
                           const EngineSchedule &schedule, RunTask runTask) {
  static_assert(kWindowWords % records::kAlignWords == 0,
                "the window is copied in 16-byte units");
  extern __shared__ __align__(128) char loomDynamicSmem[];
  __shared__ __align__(16) int32_t sWindow[kWindowWords];
  __shared__ uint64_t sWindowBar;
  __shared__ uint64_t sBindingData[kBindings];
  __shared__ int32_t sTask, sFunction, sTile; // task in hand; -1: none left
  __shared__ int32_t sWait;  // 0, or why the leader gave up waiting
  __shared__ int32_t sError; // a body's non-zero return
  __shared__ int32_t sSkip;  // an earlier launch failed: do nothing
  // The leader's state. Only it reads it; it lives here, not in registers,
  // because registers live across the body call would be saved around it
  // by every thread. What changes per task is one 32-byte copy in and out.
  struct State {
    int32_t cursor;   // static: the next record's list offset
    int32_t recordAt; // the task in hand's record: window offset (static),
                      // offset in schedule.records (dynamic)
    int32_t pad[2];
    RecordWindow window;
  };
  __shared__ __align__(16) State sState;
  __shared__ unsigned long long sEpoch, sTicketBase;
  __shared__ int64_t sRuntimeRows; // tasks whose first row is past it are empty
  __shared__ SeenCounts sSeen;
  __shared__ Prefetcher sPrefetcher;
  __shared__ uint64_t sEntryNs, sPickNs, sStartNs; // kProfile

  const int32_t worker = static_cast<int32_t>(blockIdx.x);
  LoomWorkerStatus *status = args.status + worker;
  const bool leader = threadIdx.x == 0;
  const bool dynamic = schedule.mode == LOOM_SCHEDULE_DYNAMIC;
  const bool prefetch = !dynamic && schedule.prefetchBudget != 0;
  const bool deviceNumbered = args.epoch == 0;
  const int32_t *const list =
      schedule.records + int64_t(worker) * schedule.stride;
  LoomTaskTiming *const profile = kProfile ? args.profile : nullptr;
  if (prefetch)
    for (int32_t b = threadIdx.x; b < schedule.numBindings; b += kThreads) {
      // The copy engine needs 16-byte aligned addresses: a buffer bound
      // elsewhere gets no prefetch.
      const uint64_t data = reinterpret_cast<uint64_t>(args.bindings[b].data);
      sBindingData[b] = data % 16 == 0 ? data : 0;
    }
  if (!dynamic && threadIdx.x < 32) {
    // The first window by the first warp's 16-byte loads: at entry a bulk
    // copy's completion costs more than the loads' L2 round trip.
    const int32_t n = min(kWindowWords, schedule.stride);
    for (int32_t i = 4 * threadIdx.x; i < n; i += 4 * 32)
      *reinterpret_cast<int4 *>(sWindow + i) =
          *reinterpret_cast<const int4 *>(list + i);
  }
  if (leader) {
    if (kProfile && profile)
      sEntryNs = globalTimerNs();
    State L{};
    L.window.end = min(kWindowWords, schedule.stride);
    sState = L;
    sPrefetcher = Prefetcher{sBindingData, schedule.prefetchBudget, 0, 0, 0};
    sError = 0;
    sSeen.clear();
    // Launches the host numbers touch no control word; launches numbered
    // on the device read this worker's count, and skip everything once a
    // launch failed (its counters no longer mean anything) until the
    // runtime resets them.
    unsigned long long failed = 0, done = 0;
    if (deviceNumbered) {
      failed = loadRelaxedGpu(args.control + LOOM_CONTROL_FAILED);
      done = loadRelaxedGpu(args.control + LOOM_CONTROL_WORKERS + worker);
    }
    sRuntimeRows = schedule.runtimeBinding >= 0
                       ? args.bindings[schedule.runtimeBinding].dims[0]
                       : INT64_MAX;
    sSkip = failed != 0;
    const unsigned long long epoch = deviceNumbered ? done + 1 : args.epoch;
    sEpoch = epoch;
    sTicketBase = (epoch - 1) * static_cast<unsigned long long>(
                                    schedule.numTasks + gridDim.x);
  }
  __syncthreads();
  if (sSkip)
    return;

  for (;;) {
    // The leader picks the task and waits for its inputs. The shared task
    // words are rewritten only after the barrier that ends the previous
    // body, which every thread passes after reading them.
    if (leader) {
      const RecordSource<kWindowWords> src{sWindow, &sWindowBar, list,
                                           schedule.stride};
      State L = sState;
      const unsigned long long epoch = sEpoch;
      const int64_t runtimeRows = sRuntimeRows;
      const int32_t *record = nullptr;
      int32_t task = -1, function = 0, tile = 0, wait = 0;
      uint64_t pickNs = 0;
      // Tasks without work for this launch's sizes only trigger: no wait,
      // no body, no barrier.
      for (;;) {
        task = -1;
        if (dynamic) {
          const unsigned long long ticket =
              fetchAddRelaxedGpu(args.events + schedule.numEvents, 1) -
              sTicketBase;
          if (ticket < static_cast<unsigned long long>(schedule.numTasks)) {
            L.recordAt = schedule.queueOffsets[ticket];
            record = schedule.records + L.recordAt;
            task = record[0];
          }
        } else {
          L.recordAt = L.window.at(L.cursor, schedule.maxRecordWords, src);
          record = sWindow + L.recordAt;
          task = record[0];
        }
        if (kProfile && profile)
          pickNs = globalTimerNs();
        if (task < 0 || record[4] == 0 || runtimeRows > record[4])
          break;
        triggerAll(args, record, /*release=*/false);
        if (kProfile && profile)
          storeTiming(profile + task, pickNs, pickNs, pickNs, worker, epoch);
        if (!dynamic) {
          if (prefetch)
            sPrefetcher.done(L.cursor, record);
          L.cursor += records::recordWords(record[3]);
        }
      }
      if (task >= 0) {
        function = record[1];
        tile = record[2];
        const int32_t waits = records::numWaits(record[3]);
        const int32_t *w = records::waitsOf(record);
        // A task that must wait brings its own weights (and the next
        // tasks') on chip meanwhile; one that need not wait reads its own.
        auto blocked = [&] {
          if (prefetch)
            sPrefetcher.from(L.cursor, L.window, src);
        };
        for (int32_t i = 0; i < waits && !wait; ++i, w += records::kWaitWords)
          wait = awaitEvent(args, status, task, w[0],
                            epoch * static_cast<unsigned long long>(w[1]),
                            sSeen, blocked);
        if (prefetch && !wait)
          sPrefetcher.from(L.cursor + records::recordWords(record[3]),
                           L.window, src);
        if (kProfile && profile) {
          sPickNs = pickNs;
          sStartNs = globalTimerNs();
        }
      }
      sTask = task;
      sFunction = function;
      sTile = tile;
      sWait = wait;
      sState = L;
    }
    __syncthreads();
    const int32_t task = sTask;
    if (task < 0)
      break;
    if (sWait != 0)
      goto leave; // status already says where and why

    {
      const int32_t err = runTask(sFunction, sTile, task, args, loomDynamicSmem);
      if (err != 0)
        sError = err;
      // Ends the body: every thread's stores are ordered before the
      // leader's release below, and no thread still uses the shared memory.
      if (__syncthreads_or(err != 0)) {
        if (leader) {
          publishWait(status, task, -1, 0, 0);
          fail(args, status, sError);
        }
        goto leave;
      }
    }
    if (leader) {
      const int32_t cursor = sState.cursor, recordAt = sState.recordAt;
      const int32_t *record =
          (dynamic ? schedule.records : sWindow) + recordAt;
      if (kProfile && profile)
        storeTiming(profile + task, sPickNs, sStartNs, globalTimerNs(), worker,
                    sEpoch);
      triggerAll(args, record, /*release=*/true);
      if (!dynamic) {
        if (prefetch)
          sPrefetcher.done(cursor, record);
        sState.cursor = cursor + records::recordWords(record[3]);
      }
    }
  }
  if (kProfile && leader && profile)
    storeTiming(profile + schedule.numTasks + worker, sEntryNs, sEntryNs,
                globalTimerNs(), worker, sEpoch);
leave:
  // This worker has run launch `epoch` (DeviceAbi.h): its next one is the
  // one after.
  if (leader && deviceNumbered)
    storeRelaxedGpu(args.control + LOOM_CONTROL_WORKERS + worker, sEpoch);
}

} // namespace detail

/// The worker loop; call it from the kernel with every thread of the block
/// (blockDim.x == kThreads, one block per worker, gridDim.x == num_workers).
/// `runTask(function, tile, task, args, smem)` is called by all threads of
/// the block with the dynamic shared memory; it returns 0 or an error code
/// (any non-zero value of any thread counts). kWindowWords: the shared
/// window of records (>= schedule.maxRecordWords + 3); kBindings: the
/// program's buffers (>= 1), whose addresses prefetches read.
template <int kThreads, int kWindowWords, int kBindings, typename RunTask>
__device__ __forceinline__ void loomPersistentLoop(const LoomKernelArgs &args,
                                                   const EngineSchedule &s,
                                                   RunTask runTask) {
  detail::workerLoop<kThreads, kWindowWords, kBindings, false>(args, s,
                                                               runTask);
}

/// loomPersistentLoop that also records per-task timings into args.profile
/// (when it is not null); what `loomc --profile` emits.
template <int kThreads, int kWindowWords, int kBindings, typename RunTask>
__device__ __forceinline__ void loomProfiledLoop(const LoomKernelArgs &args,
                                                 const EngineSchedule &s,
                                                 RunTask runTask) {
  detail::workerLoop<kThreads, kWindowWords, kBindings, true>(args, s,
                                                              runTask);
}

} // namespace nvidia
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_INTERPRETER_CUH
