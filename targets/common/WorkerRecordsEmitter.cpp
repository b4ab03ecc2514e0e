//===- WorkerRecordsEmitter.cpp - The schedule as packed records ---------===//
#include "targets/common/WorkerRecordsEmitter.h"

#include "kernels/common/WorkerRecords.h"
#include "passes/TaskModel.h"

using namespace mlir;
using namespace mlir::loom;
namespace records = ::loom::records;

namespace {

/// The largest window of records a worker keeps in shared memory, in words:
/// a decoder stack's lists are longer and are walked a window at a time.
constexpr int64_t kMaxWindowWords = 1024;

int64_t roundUp(int64_t value, int64_t to) { return (value + to - 1) / to * to; }

/// Task `t`'s prefetch ranges in root coordinates (weights only: graph
/// arguments no task writes), 16-byte aligned and inside the buffer.
void prefetchRanges(GraphOp graph, const TableTask &t, const GraphBounds &bounds,
                    std::vector<records::Prefetch> &out) {
  auto partition = t.op->getAttrOfType<PartitionAttr>(kPartitionAttr);
  SmallVector<TaskLoad> loads;
  getTaskLoads(t.op, partition, t.phase, t.tile, bounds, loads);
  for (const TaskLoad &load : loads) {
    auto located = locateRoot(load.buffer, bounds);
    if (!located || located->first == kArenaRoot ||
        graph.getArgRole(located->first) != Role::Weight)
      continue;
    auto type = cast<MemRefType>(
        graph.getBodyBlock().getArgument(located->first).getType());
    // Whole 16-byte units inside the buffer: the bulk copy engine's unit.
    const int64_t limit = boundedBytes(type, bounds) / 16 * 16;
    const int64_t begin = located->second + load.offset;
    const int64_t first = begin / 16 * 16;
    const int64_t last = roundUp(begin + load.rowBytes, 16);
    const int64_t stride = load.rows > 1 ? load.stride : 0;
    if (stride % 16 != 0 || last <= first ||
        first + (load.rows - 1) * stride + (last - first) > limit)
      continue; // the body reads these bytes itself
    out.push_back({int32_t(located->first), first, last - first, load.rows,
                   stride});
  }
}

} // namespace

LogicalResult mlir::loom::emitWorkerRecords(GraphOp graph,
                                            const TaskTable &table,
                                            ArrayRef<int64_t> taskFunction,
                                            int64_t prefetchBudget,
                                            llvm::raw_ostream &os,
                                            EmittedRecords &out) {
  GraphBounds bounds = GraphBounds::of(graph);
  std::vector<records::Task> tasks(table.tasks.size());
  bool anyPrefetch = false;
  for (auto [i, t] : llvm::enumerate(table.tasks)) {
    records::Task &r = tasks[i];
    r.id = int32_t(i);
    r.function = int32_t(taskFunction[i]);
    r.tile = int32_t(t.tile);
    for (int64_t e : t.waits)
      r.waits.push_back({int32_t(e), int32_t(table.eventNeeds[e])});
    for (int64_t e : t.triggers)
      r.triggers.push_back(int32_t(e));
    if (prefetchBudget > 0)
      prefetchRanges(graph, t, bounds, r.prefetches);
    r.firstRow = int32_t(firstRuntimeRow(
        t.op, t.op->getAttrOfType<PartitionAttr>(kPartitionAttr), t.phase,
        t.tile, bounds));
    anyPrefetch |= !r.prefetches.empty();
    if (std::string why = records::unencodable(r); !why.empty())
      return t.op->emitOpError("task ") << t.name << " " << why;
  }
  std::vector<int32_t> words, queueOffsets{0};
  int64_t stride = 0, maxRecordWords = 0;
  if (table.dynamic) {
    std::vector<const records::Task *> queue;
    for (int64_t id : table.queue)
      queue.push_back(&tasks[id]);
    records::QueueRecords packed = records::packQueue(queue);
    words = std::move(packed.words);
    queueOffsets = std::move(packed.offsets);
    maxRecordWords = packed.maxRecordWords;
  } else {
    std::vector<std::vector<const records::Task *>> lists(table.workers);
    for (auto [w, list] : llvm::enumerate(table.workerLists))
      for (int64_t id : list)
        lists[w].push_back(&tasks[id]);
    records::StaticRecords packed = records::packStatic(lists);
    words = std::move(packed.words);
    stride = packed.stride;
    maxRecordWords = packed.maxRecordWords;
  }
  out.windowWords = std::max(std::min(roundUp(stride, records::kAlignWords),
                                  kMaxWindowWords),
                         roundUp(maxRecordWords + records::kAlignWords - 1,
                                 records::kAlignWords));
  out.stride = stride;
  out.maxRecordWords = maxRecordWords;
  out.prefetchBudget = anyPrefetch ? prefetchBudget : 0;
  os << "// " << words.size() << " words of records"
     << (table.dynamic ? " in queue order" : ", " + std::to_string(stride) +
                                                  " per worker")
     << "; the longest record has " << maxRecordWords << " words.\n"
     << "__device__ __align__(16) const int32_t dRecords[] = {";
  // One record per line: task, function, tile, counts, first row, then
  // waits (event, needs), triggers, prefetches; each worker's list padded.
  auto printWords = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      os << " " << words[i] << ",";
  };
  auto printList = [&](size_t begin, size_t end) {
    size_t at = begin;
    while (at < end) {
      const bool last = words[at] == records::kEndOfList;
      const size_t next =
          last ? end : at + records::recordWords(words[at + 3]);
      os << "\n   ";
      printWords(at, next);
      at = next;
    }
  };
  if (table.dynamic) {
    printList(0, words.size());
  } else {
    for (int64_t w = 0; w < table.workers; ++w) {
      os << "\n    // worker " << w;
      printList(size_t(w * stride), size_t((w + 1) * stride));
    }
  }
  os << "};\n__device__ const int32_t dQueueOffsets[] = {";
  for (auto [i, v] : llvm::enumerate(queueOffsets))
    os << (i % 16 == 0 ? "\n   " : "") << " " << v << ",";
  os << "};\n";
  return success();
}
