/*===- WorkerRecords.h - A worker's schedule as packed records ------------===*
 *
 * The NVIDIA engine (kernels/nvidia/Interpreter.cuh) does not walk the task
 * table with dependent global loads. Each worker's schedule is one stream of
 * 32-bit words, a record per task, that the worker copies into shared memory
 * at entry (and again, a window at a time, when it is longer than the
 * window), so picking the next task, its waits, triggers and the bytes to
 * prefetch for it are shared-memory reads.
 *
 * Record (all int32):
 *   [0] task id (the task table's: status, profile, reports), or kEndOfList
 *   [1] tile function: the emitted runTask's case
 *   [2] tile
 *   [3] counts: waits | triggers << 12 | prefetches << 22
 *   [4] first runtime row: the task has work only when the runtime leading
 *       size (batch, tokens) exceeds it; 0: always. A task without work
 *       neither waits nor runs: it only triggers (it reads and writes
 *       nothing, so nothing needs to wait for it or it for anything).
 *   waits:      { event, needs per launch } each
 *   triggers:   { event } each
 *   prefetches: { binding, offset lo, offset hi, row bytes, rows, row stride }
 *               rows x row bytes at `offset + r * stride` of the binding's
 *               data, read by the task's body whatever the events say
 *               (weights): the engine brings them into L2 ahead of the task.
 *               Offsets, sizes and strides are multiples of 16 bytes.
 *
 * Static schedules: worker w's records start at word w * stride (a multiple
 * of 4: 16-byte aligned), so finding them needs no lookup, and end with a
 * kEndOfList record. Dynamic schedules: ticket t's record starts at
 * queue_offsets[t]; no end record.
 *
 * The builder below is what the emitter (targets/common/DeviceEmitter), the
 * loop test and the engine benchmark use, so the layout has one home.
 *
 *===----------------------------------------------------------------------===*/
#ifndef LOOM_KERNELS_COMMON_WORKERRECORDS_H
#define LOOM_KERNELS_COMMON_WORKERRECORDS_H

#include "kernels/common/HostDevice.h"

#include <stdint.h>

#ifdef __cplusplus
namespace loom {
namespace records {

constexpr int32_t kHeaderWords = 5;
constexpr int32_t kWaitWords = 2;
constexpr int32_t kTriggerWords = 1;
constexpr int32_t kPrefetchWords = 6;
constexpr int32_t kEndOfList = -1;
constexpr int32_t kMaxWaits = (1 << 12) - 1;
constexpr int32_t kMaxTriggers = (1 << 10) - 1;
constexpr int32_t kMaxPrefetches = (1 << 10) - 1;
/// Alignment of a bulk copy's source, destination and size.
constexpr int32_t kAlignWords = 4;

LOOM_HOST_DEVICE inline int32_t numWaits(int32_t counts) {
  return counts & kMaxWaits;
}
LOOM_HOST_DEVICE inline int32_t numTriggers(int32_t counts) {
  return (counts >> 12) & kMaxTriggers;
}
LOOM_HOST_DEVICE inline int32_t numPrefetches(int32_t counts) {
  return (counts >> 22) & kMaxPrefetches;
}
/// Where a record's waits, triggers and prefetches start.
LOOM_HOST_DEVICE inline const int32_t *waitsOf(const int32_t *rec) {
  return rec + kHeaderWords;
}
LOOM_HOST_DEVICE inline const int32_t *triggersOf(const int32_t *rec) {
  return waitsOf(rec) + kWaitWords * numWaits(rec[3]);
}
LOOM_HOST_DEVICE inline const int32_t *prefetchesOf(const int32_t *rec) {
  return triggersOf(rec) + kTriggerWords * numTriggers(rec[3]);
}
LOOM_HOST_DEVICE inline int32_t recordWords(int32_t counts) {
  return kHeaderWords + kWaitWords * numWaits(counts) +
         kTriggerWords * numTriggers(counts) +
         kPrefetchWords * numPrefetches(counts);
}

} // namespace records
} // namespace loom

// The builder is host code; nvcc's device pass parses it too.
#include <algorithm>
#include <string>
#include <vector>

namespace loom {
namespace records {

struct Wait {
  int32_t event;
  int32_t needs;
};

/// rows x rowBytes at offset + r * stride of binding `binding`.
struct Prefetch {
  int32_t binding;
  int64_t offset;
  int64_t rowBytes;
  int64_t rows;
  int64_t stride;
};

struct Task {
  int32_t id;
  int32_t function;
  int32_t tile;
  std::vector<Wait> waits;
  std::vector<int32_t> triggers;
  std::vector<Prefetch> prefetches;
  int32_t firstRow = 0;
};

/// Why `t` cannot be a record ("" when it can).
inline std::string unencodable(const Task &t) {
  if (int32_t(t.waits.size()) > kMaxWaits)
    return "waits on " + std::to_string(t.waits.size()) +
           " events (a record holds " + std::to_string(kMaxWaits) + ")";
  if (int32_t(t.triggers.size()) > kMaxTriggers)
    return "triggers " + std::to_string(t.triggers.size()) +
           " events (a record holds " + std::to_string(kMaxTriggers) + ")";
  if (t.firstRow < 0)
    return "has a negative first runtime row";
  if (int32_t(t.prefetches.size()) > kMaxPrefetches)
    return "prefetches " + std::to_string(t.prefetches.size()) +
           " ranges (a record holds " + std::to_string(kMaxPrefetches) + ")";
  for (const Prefetch &p : t.prefetches)
    if (p.offset % 16 || p.rowBytes % 16 || p.stride % 16 ||
        p.rowBytes <= 0 || p.rowBytes > INT32_MAX || p.rows <= 0 ||
        p.rows > INT32_MAX || p.stride > INT32_MAX || p.stride < 0)
      return "has a prefetch range the engine cannot copy (offset " +
             std::to_string(p.offset) + ", " + std::to_string(p.rows) +
             " rows of " + std::to_string(p.rowBytes) + " bytes, stride " +
             std::to_string(p.stride) + ")";
  return std::string();
}

/// Appends `t`'s record to `out` (unencodable(t) must be empty).
inline void append(std::vector<int32_t> &out, const Task &t) {
  out.push_back(t.id);
  out.push_back(t.function);
  out.push_back(t.tile);
  out.push_back(int32_t(t.waits.size()) | int32_t(t.triggers.size()) << 12 |
                int32_t(t.prefetches.size()) << 22);
  out.push_back(t.firstRow);
  for (const Wait &w : t.waits) {
    out.push_back(w.event);
    out.push_back(w.needs);
  }
  for (int32_t e : t.triggers)
    out.push_back(e);
  for (const Prefetch &p : t.prefetches) {
    out.push_back(p.binding);
    out.push_back(int32_t(uint32_t(uint64_t(p.offset))));
    out.push_back(int32_t(uint32_t(uint64_t(p.offset) >> 32)));
    out.push_back(int32_t(p.rowBytes));
    out.push_back(int32_t(p.rows));
    out.push_back(int32_t(p.stride));
  }
}

/// Every worker's records at a common stride (words, a multiple of
/// kAlignWords), each list ended by kEndOfList.
struct StaticRecords {
  std::vector<int32_t> words;
  int32_t stride = 0;
  int32_t maxRecordWords = kHeaderWords; ///< the longest record, end included
};

inline StaticRecords
packStatic(const std::vector<std::vector<const Task *>> &workers) {
  std::vector<std::vector<int32_t>> lists(workers.size());
  StaticRecords r;
  for (size_t w = 0; w < workers.size(); ++w) {
    for (const Task *t : workers[w]) {
      size_t before = lists[w].size();
      append(lists[w], *t);
      r.maxRecordWords =
          std::max(r.maxRecordWords, int32_t(lists[w].size() - before));
    }
    Task end{kEndOfList, 0, 0, {}, {}, {}};
    append(lists[w], end);
    while (lists[w].size() % kAlignWords)
      lists[w].push_back(0);
    r.stride = std::max(r.stride, int32_t(lists[w].size()));
  }
  r.words.assign(size_t(r.stride) * workers.size(), 0);
  for (size_t w = 0; w < workers.size(); ++w)
    std::copy(lists[w].begin(), lists[w].end(),
              r.words.begin() + size_t(r.stride) * w);
  if (r.words.empty())
    r.words.assign(kAlignWords, 0);
  return r;
}

/// Dynamic schedules: the records in queue order and where each starts.
struct QueueRecords {
  std::vector<int32_t> words;
  std::vector<int32_t> offsets;
  int32_t maxRecordWords = kHeaderWords;
};

inline QueueRecords packQueue(const std::vector<const Task *> &queue) {
  QueueRecords r;
  for (const Task *t : queue) {
    r.offsets.push_back(int32_t(r.words.size()));
    append(r.words, *t);
    r.maxRecordWords = std::max(
        r.maxRecordWords, int32_t(r.words.size()) - r.offsets.back());
  }
  if (r.words.empty())
    r.words.push_back(0);
  if (r.offsets.empty())
    r.offsets.push_back(0);
  return r;
}

} // namespace records
} // namespace loom
#endif // __cplusplus

#endif /* LOOM_KERNELS_COMMON_WORKERRECORDS_H */
