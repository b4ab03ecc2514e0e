//===- Interpreter.cuh - The persistent worker loop --------------*- CUDA -*-===//
//
// One block per worker, all co-resident (cooperative launch). Thread 0, the
// leader, waits for each task's input events, and after the whole block has
// run the task's body, triggers its output events. The memory-order
// protocol is in Atomics.cuh.
//
// The schedule is packed records (kernels/common/WorkerRecords.h). In
// static mode a warp copies its worker's first kWindowWords of records into
// shared memory at entry (the leader copies the next window with
// cp.async.bulk when the walk reaches its end), and every thread walks the
// window itself, so a task costs the block one barrier (the one ending its
// body) plus one when the leader must wait for inputs first; nothing is
// handed from the leader to the block through shared memory. Dynamic mode
// takes tickets from one queue counter and reads ticket t's record from
// global memory (one more barrier hands the ticket to the block). A task
// whose first runtime row is at or past the run's leading size has no
// work: it only triggers.
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
// every kCheckCycles; at those points it checks args.timeout_cycles (0 = no
// timeout) and *args.abort_flag (as read at the check before: the PCIe read
// is not waited for). A worker that gives up, or whose
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
#include "kernels/nvidia/MetaFault.cuh"

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

__device__ __noinline__ void publishWait(LoomWorkerStatus *s, int32_t task,
                                            int32_t event,
                                            unsigned long long seen,
                                            unsigned long long needed) {
  storeRelaxedSys(&s->task, task);
  storeRelaxedSys(&s->event, event);
  storeRelaxedSys(&s->seen, uint64_t(seen));
  storeRelaxedSys(&s->needed, uint64_t(needed));
}

/// Records a failure where the host and every later launch see it, and
/// tells the other workers to leave at their next check. Rare paths are
/// out of line (keeping the loop's hot path short and together in the
/// instruction cache) and take pointers, not the kernel's parameters by
/// reference, which would copy them to the stack at every entry.
__device__ __noinline__ void fail(volatile int32_t *abortFlag,
                                  unsigned long long *control,
                                  LoomWorkerStatus *s, int32_t error) {
  storeRelaxedSys(&s->error, error);
  storeRelaxedSys(abortFlag, 1);
  if (control)
    storeRelaxedGpu(control + LOOM_CONTROL_FAILED, 1ull);
}

/// The leader, after task `task`'s body failed (`error`) or refused a meta
/// value (the block's MetaFaultSlot, which takes precedence).
__device__ __noinline__ void failTask(volatile int32_t *abortFlag,
                                      unsigned long long *control,
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
  fail(abortFlag, control, s, error);
}

/// The counts a worker's leader has seen (acquired) per event, direct-mapped:
/// counters only grow, so a later wait for a count at most one seen is over
/// without a load, and the acquire that saw it already orders what follows.
/// A decoder's consecutive tiles of one op wait on the same events.
struct SeenCounts {
  static constexpr int kSlots = 64;
  int32_t event[kSlots];
  unsigned long long count[kSlots];

  /// Called by every thread of the block: thread `first` of `step` clears
  /// its share.
  __device__ void clear(int first, int step) {
    for (int i = first; i < kSlots; i += step)
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
  // The abort flag is host memory: a read is a PCIe round trip. Each check
  // issues one and looks at the one before, so no poll waits for it.
  int32_t abortFlag = 0;
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
    if (abortFlag != 0) {
      fail(args.abort_flag, args.control, status, kWorkerAborted);
      return kWorkerAborted;
    }
    abortFlag = loadRelaxedSys(args.abort_flag);
    if (args.timeout_cycles != 0 &&
        static_cast<unsigned long long>(now - start) > args.timeout_cycles) {
      fail(args.abort_flag, args.control, status, kWorkerTimedOut);
      return kWorkerTimedOut;
    }
  }
}

/// Leader: adds 1 to each event `rec` triggers. Release: the block's
/// stores (ordered before by a barrier) happen before the adds; a task
/// without work has none and triggers relaxed.
__device__ __forceinline__ void triggerAll(unsigned long long *events,
                                           const int32_t *rec, bool release) {
  const int32_t triggers = records::numTriggers(rec[3]);
  const int32_t *t = records::triggersOf(rec);
  if (release && triggers == 1) {
    redAddReleaseGpu(events + t[0], 1);
    return;
  }
  if (release && triggers > 1)
    fenceAcqRelGpu(); // one fence for all of the task's adds
  for (int32_t i = 0; i < triggers; ++i)
    redAddRelaxedGpu(events + t[i], 1);
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

/// L2 prefetches of the records' ranges (static mode): those after the task
/// in hand while it runs, and its own when it has to wait for an event;
/// at most `budget` bytes issued for tasks not yet done.
struct Prefetcher {
  const LoomTaskBinding *bindings; // shared: the launch's bindings
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
      // The copy engine needs 16-byte aligned addresses: a buffer bound
      // elsewhere gets no prefetch.
      const char *base = static_cast<const char *>(bindings[p[0]].data);
      if (reinterpret_cast<uint64_t>(base) % 16 != 0)
        continue;
      const char *at = base +
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

  /// Issues the records from list offset `at` on, as far as the window
  /// (list words [base, end) at `words`) holds them and the budget goes.
  __device__ __noinline__ void from(int32_t at, int32_t base, int32_t end,
                       const int32_t *words) {
    if (cursor < at) {
      first = cursor = at;
      ahead = 0;
    }
    while (ahead < budget && cursor + records::kHeaderWords <= end) {
      const int32_t *rec = words + (cursor - base);
      if (rec[0] == records::kEndOfList ||
          cursor + records::recordWords(rec[3]) > end)
        return;
      ahead += issue(rec);
      cursor += records::recordWords(rec[3]);
    }
  }

  /// The task at list offset `task` is done: its bytes no longer count.
  __device__ __noinline__ void done(int32_t task, const int32_t *rec) {
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

/// Leader, static mode: copies the worker's list on from the record at
/// window offset `at` (rounded down to 16 bytes) into the window. Out of
/// line: it is rare, and the loop's hot path stays short and together.
template <int kWindowWords>
__device__ __noinline__ void
reloadWindow(int32_t *window, uint64_t *bar, uint32_t *phase, int32_t *base,
             int32_t *words, int32_t at, const int32_t *list, int32_t listWords) {
  const int32_t from = (*base + at) & ~(records::kAlignWords - 1);
  const int32_t n = min(kWindowWords, listWords - from);
  fenceProxyAsyncShared(); // the generic reads of the old window first
  mbarrierArriveExpectTx(bar, uint32_t(n) * 4u);
  bulkCopyToShared(window, list + from, uint32_t(n) * 4u, bar);
  mbarrierWait(bar, *phase);
  *phase ^= 1u;
  *base = from;
  *words = n;
}

/// A record's header words (WorkerRecords.h).
struct Header {
  int32_t task, function, tile, counts, firstRow;
  __device__ __forceinline__ static Header at(const int32_t *rec) {
    return {rec[0], rec[1], rec[2], rec[3], rec[4]};
  }
};

/// The leader's wait for every input of the task `rec` describes: 0, or why
/// it gave up (status already says where). A task that must wait brings
/// its own weights (and the next tasks') into L2 meanwhile; one that need
/// not wait, the next tasks'.
template <typename Prefetch>
__device__ __forceinline__ int32_t awaitInputs(const LoomKernelArgs &args,
                                               LoomWorkerStatus *status,
                                               const int32_t *rec,
                                               unsigned long long epoch,
                                               SeenCounts &seen,
                                               Prefetch prefetchFrom) {
  const int32_t task = rec[0];
  const int32_t waits = records::numWaits(rec[3]);
  const int32_t *w = records::waitsOf(rec);
  int32_t wait = 0;
  for (int32_t i = 0; i < waits && !wait; ++i, w += records::kWaitWords)
    wait = awaitEvent(args, status, task, w[0],
                      epoch * static_cast<unsigned long long>(w[1]), seen,
                      [&] { prefetchFrom(0); });
  if (!wait)
    prefetchFrom(records::recordWords(rec[3]));
  return wait;
}

/// Leader, a task without work for this launch's sizes: it only triggers
/// (relaxed: it wrote nothing). Out of line, as everything rare.
__device__ __noinline__ void skipTask(unsigned long long *events,
                                      const int32_t *rec,
                                      LoomTaskTiming *profile, int32_t worker,
                                      unsigned long long epoch) {
  triggerAll(events, rec, /*release=*/false);
  if (profile) {
    const uint64_t now = globalTimerNs();
    storeTiming(profile + rec[0], now, now, now, worker, epoch);
  }
}

/// Leader, dynamic mode: takes tickets until one has work (tasks without
/// work only trigger); returns its record's offset, or -1 when the launch's
/// tickets are all taken.
__device__ __noinline__ int32_t
takeTicket(unsigned long long *events, unsigned long long *queue,
           const int32_t *queueOffsets, const int32_t *records,
           int32_t numTasks, unsigned long long ticketBase,
           int64_t runtimeRows, LoomTaskTiming *profile, int32_t worker,
           unsigned long long epoch) {
  for (;;) {
    const unsigned long long ticket =
        fetchAddRelaxedGpu(queue, 1) - ticketBase;
    if (ticket >= static_cast<unsigned long long>(numTasks))
      return -1;
    const int32_t recordAt = queueOffsets[ticket];
    const int32_t *r = records + recordAt;
    if (r[4] == 0 || runtimeRows > r[4])
      return recordAt;
    skipTask(events, r, profile, worker, epoch);
  }
}

/// loomPersistentLoop's body; kProfile adds the timing records.
///
/// Every thread walks the worker's records in the shared window itself (the
/// window offset of the next record is a register of each thread, and every
/// thread takes the same branches), so a task costs the block one barrier,
/// the one that ends its body, plus one more when the leader has to wait
/// for its inputs first. Dynamic mode: the leader takes a ticket and waits,
/// then one barrier hands the ticket's record to the block.
template <int kThreads, int kWindowWords, int kBindings, bool kProfile,
          typename RunTask, typename Preload>
__device__ void workerLoop(const LoomKernelArgs &args,
                           const EngineSchedule &schedule, RunTask runTask,
                           Preload preloadTask) {
  static_assert(kWindowWords % records::kAlignWords == 0,
                "the window is copied in 16-byte units");
  static_assert(kThreads % 32 == 0, "whole warps");
  extern __shared__ __align__(128) char loomDynamicSmem[];
  __shared__ __align__(16) int32_t sWindow[kWindowWords];
  __shared__ uint64_t sWindowBar;
  __shared__ LoomTaskBinding sBindings[kBindings]; // what the tasks read
  // Static mode: the window holds list words [sWinBase, sWinBase + sWinWords).
  __shared__ int32_t sWinBase, sWinWords;
  __shared__ uint32_t sWinPhase;
  __shared__ int32_t sRecordAt; // dynamic: the ticket's record; -1: none left
  __shared__ int32_t sError; // a body's non-zero return
  __shared__ int32_t sSkip;  // an earlier launch failed: do nothing
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

  // Entry: the first window (one warp's 16-byte loads: here a bulk copy's
  // completion costs more than the loads' L2 round trip), the leader's
  // control words and sizes (another warp's, so the two round trips
  // overlap), the seen-count cache and the prefetch addresses.
  constexpr int kCopyWarp = kThreads >= 64 ? 1 : 0;
  if (!dynamic && threadIdx.x / 32 == kCopyWarp) {
    const int32_t n = min(kWindowWords, schedule.stride);
    for (int32_t i = 4 * (threadIdx.x % 32); i < n; i += 4 * 32)
      *reinterpret_cast<int4 *>(sWindow + i) =
          *reinterpret_cast<const int4 *>(list + i);
  }
  sSeen.clear(threadIdx.x, kThreads);
  for (int32_t b = threadIdx.x; b < schedule.numBindings; b += kThreads)
    sBindings[b] = LoomTaskBinding{args.bindings[b].data,
                                   {args.bindings[b].dims[0]}};
  if (leader) {
    if (kProfile && profile)
      sEntryNs = globalTimerNs();
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
    sError = 0;
    metaFaultSlot().taken = 0;
    sWinBase = 0;
    sWinWords = min(kWindowWords, schedule.stride);
    sWinPhase = 0;
    if (!dynamic && schedule.stride > kWindowWords)
      mbarrierInit(&sWindowBar, 1);
    sPrefetcher = Prefetcher{sBindings, schedule.prefetchBudget, 0, 0, 0};
  }
  __syncthreads();
  if (sSkip)
    return;

  // Static mode: the next record's window offset, and the offset past which
  // a record might not fit the window (INT32_MAX: the window ends the list).
  int32_t at = 0;
  int32_t reloadPast = schedule.stride <= kWindowWords
                           ? INT32_MAX
                           : kWindowWords - schedule.maxRecordWords;
  // The leader's wait, with the prefetches it issues meanwhile.
  auto leaderAwait = [&](const int32_t *rec) {
    auto prefetchFrom = [&](int32_t skip) {
      if (prefetch)
        sPrefetcher.from(sWinBase + at + skip, sWinBase, sWinBase + sWinWords,
                         sWindow);
    };
    if (kProfile && profile)
      sPickNs = globalTimerNs();
    const int32_t wait =
        awaitInputs(args, status, rec, sEpoch, sSeen, prefetchFrom);
    if (kProfile && profile)
      sStartNs = globalTimerNs();
    return wait;
  };

  for (;;) {
    Header h;             // the task in hand
    const int32_t *rec;   // its record (shared or global memory)
    if (dynamic) {
      // sRecordAt is rewritten only after the barrier that ends the
      // previous body, which every thread passes after reading it.
      if (leader)
        sRecordAt = takeTicket(args.events, args.events + schedule.numEvents,
                               schedule.queueOffsets, schedule.records,
                               schedule.numTasks, sTicketBase, sRuntimeRows,
                               profile, worker, sEpoch);
      __syncthreads();
      if (sRecordAt < 0)
        break;
      rec = schedule.records + sRecordAt;
      h = Header::at(rec);
    } else {
      if (__builtin_expect(at > reloadPast, 0)) {
        // The next record might run past the window: the leader copies
        // the window on from it, once every thread is done reading the
        // old one (threads run ahead of each other between barriers).
        __syncthreads();
        if (leader)
          reloadWindow<kWindowWords>(sWindow, &sWindowBar, &sWinPhase,
                                     &sWinBase, &sWinWords, at, list,
                                     schedule.stride);
        __syncthreads();
        at &= records::kAlignWords - 1; // the old base was aligned too
        reloadPast = sWinBase + sWinWords >= schedule.stride
                         ? INT32_MAX
                         : sWinWords - schedule.maxRecordWords;
      }
      // The header's words at once (independent loads); a record is never
      // shorter than its header and the window always holds it.
      rec = sWindow + at;
      h = Header::at(rec);
      if (h.task < 0)
        break;
      if (h.firstRow != 0 && sRuntimeRows <= h.firstRow) {
        // No work for this launch's sizes: it only triggers (no wait,
        // no body, no barrier).
        if (leader) {
          skipTask(args.events, rec, profile, worker, sEpoch);
          if (prefetch)
            sPrefetcher.done(sWinBase + at, rec);
        }
        at += records::recordWords(h.counts);
        continue;
      }
    }
    bool preloaded = false;
    {
      // Only the leader's flag says whether its wait failed: the barrier
      // carries it, no shared word. Without waits there is no barrier:
      // the one that ended the last body is enough. A task that waits
      // first issues the loads that need none of its inputs (the barrier
      // that ended the last body frees the shared memory for them).
      const bool waits = records::numWaits(h.counts) != 0;
      if constexpr (Preload::kActive)
        if (waits)
          preloaded = preloadTask(h.function, h.tile, args, sBindings,
                                  loomDynamicSmem);
      int32_t wait = 0;
      if (leader && (waits || prefetch || (kProfile && profile)))
        wait = leaderAwait(rec); // also the stamps and next prefetches
      // A failed wait leaves a preload's copies in flight: the launch is
      // over either way, and they write only this block's shared memory.
      if (waits && __syncthreads_or(wait != 0))
        goto leave; // status already says where and why
    }
    {
      int32_t err;
      if constexpr (Preload::kActive)
        err = runTask(h.function, h.tile, h.task, args, sBindings,
                      loomDynamicSmem, preloaded);
      else
        err = runTask(h.function, h.tile, h.task, args, sBindings,
                      loomDynamicSmem);
      if (err != 0)
        sError = err;
      // Ends the body: every thread's stores are ordered before the
      // leader's release below, and no thread still uses the shared memory.
      // A refused meta value (MetaFault.cuh) fails the task too; the
      // record is read after the barrier that ends its writes.
      if (__syncthreads_or(err != 0) || metaFaultSlot().taken) {
        if (leader)
          failTask(args.abort_flag, args.control, status, h.task, sError);
        goto leave;
      }
      if (leader && kProfile && profile)
        storeTiming(profile + h.task, sPickNs, sStartNs, globalTimerNs(),
                    worker, sEpoch);
      if (dynamic) {
        if (leader)
          triggerAll(args.events, schedule.records + sRecordAt, /*release=*/true);
      } else {
        if (leader) {
          triggerAll(args.events, sWindow + at, /*release=*/true);
          if (prefetch)
            sPrefetcher.done(sWinBase + at, sWindow + at);
        }
        at += records::recordWords(sWindow[at + 3]);
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

/// loomPersistentLoop's preload for programs without one.
struct NoPreload {
  static constexpr bool kActive = false;
  __device__ bool operator()(int32_t, int64_t, const LoomKernelArgs &,
                             const LoomTaskBinding *, char *) const {
    return false;
  }
};

} // namespace detail

/// A program's preload: `preload(function, tile, args, bindings, smem)`,
/// called by all threads of the block for a task that has inputs to wait
/// for, before the wait, issues the task's loads that need none of them
/// and returns whether it issued any; runTask then gets that flag as a last
/// argument (`preloaded`).
template <typename F> struct TaskPreload {
  static constexpr bool kActive = true;
  F f;
  __device__ bool operator()(int32_t function, int64_t tile,
                             const LoomKernelArgs &args,
                             const LoomTaskBinding *b, char *smem) const {
    return f(function, tile, args, b, smem);
  }
};

/// TaskPreload of a lambda.
template <typename F> __device__ TaskPreload<F> taskPreload(F f) {
  return TaskPreload<F>{f};
}

/// The worker loop; call it from the kernel with every thread of the block
/// (blockDim.x == kThreads, one block per worker, gridDim.x == num_workers).
/// `runTask(function, tile, task, args, bindings, smem)` is called by all
/// threads of the block with the loop's shared copy of the bindings and the
/// dynamic shared memory; it returns 0 or an error code (any non-zero value
/// of any thread counts). kWindowWords: the shared window of records
/// (>= schedule.maxRecordWords + 3); kBindings: the program's buffers
/// (>= 1), copied into shared memory at the start. With a TaskPreload,
/// runTask takes `bool preloaded` last.
template <int kThreads, int kWindowWords, int kBindings, typename RunTask,
          typename Preload = detail::NoPreload>
__device__ __forceinline__ void
loomPersistentLoop(const LoomKernelArgs &args, const EngineSchedule &s,
                   RunTask runTask, Preload preload = {}) {
  detail::workerLoop<kThreads, kWindowWords, kBindings, false>(args, s, runTask,
                                                               preload);
}

/// loomPersistentLoop that also records per-task timings into args.profile
/// (when it is not null); what `loomc --profile` emits.
template <int kThreads, int kWindowWords, int kBindings, typename RunTask,
          typename Preload = detail::NoPreload>
__device__ __forceinline__ void
loomProfiledLoop(const LoomKernelArgs &args, const EngineSchedule &s,
                 RunTask runTask, Preload preload = {}) {
  detail::workerLoop<kThreads, kWindowWords, kBindings, true>(args, s, runTask,
                                                              preload);
}

} // namespace nvidia
} // namespace loom

#endif // LOOM_KERNELS_NVIDIA_INTERPRETER_CUH
