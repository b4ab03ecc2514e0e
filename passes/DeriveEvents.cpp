//===- DeriveEvents.cpp - loom-derive-events: the task table ---------------===//
//
// Tasks are visited in program order (op, phase, tile). For every root
// storage (a graph argument, or the workspace arena) a segment map records,
// per byte range, the tasks that last wrote it and those that read it since.
// A task depends on the last writers of what it reads (RAW), and on the last
// writers and readers of what it writes (WAW, WAR). Tasks of one phase are
// independent by construction (they write disjoint tiles), so a phase's
// dependencies are all computed before its own accesses are recorded.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TaskModel.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

#include <map>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMDERIVEEVENTS
#include "passes/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

constexpr int64_t kArena = kArenaRoot;
constexpr int64_t kUnbounded = INT64_MAX / 4;

struct TaskRecord {
  Operation *op;
  int64_t opId, phase, tile, cost;
  int64_t group; ///< index of (op, phase)
};

/// A byte range of one root storage.
struct RootRange {
  int64_t root; ///< graph argument number, or kArena
  int64_t begin, end;
};

/// Who wrote and read a byte range of one root, since its last write.
/// Readers are kept per phase (group), not per task: a later writer waits
/// for the whole reading phase, a safe over-approximation that keeps the
/// map small. Writers are kept per task while few, else as their whole phase.
struct Segment {
  int64_t end;
  int64_t writeGroup = -1;     ///< phase of the last write
  bool wholeGroupWrote = false; ///< every writer of writeGroup counts
  SmallVector<int64_t, 2> writers;
  SmallVector<int64_t, 2> readerGroups;
};

/// What a task depends on: single tasks, and whole phases.
struct DepSink {
  virtual ~DepSink() = default;
  virtual void task(int64_t producer) = 0;
  virtual void group(int64_t producerGroup) = 0;
};

constexpr size_t kMaxWritersPerSegment = 8;

class SegmentMap {
public:
  /// Reports to `sink` what a reader (or writer) of [b, e) must follow.
  void collect(int64_t b, int64_t e, bool write, DepSink &sink) const {
    auto it = segments.upper_bound(b);
    if (it != segments.begin())
      --it;
    for (; it != segments.end() && it->first < e; ++it) {
      const Segment &seg = it->second;
      if (seg.end <= b)
        continue;
      if (seg.wholeGroupWrote)
        sink.group(seg.writeGroup);
      else
        for (int64_t task : seg.writers)
          sink.task(task);
      if (write)
        for (int64_t group : seg.readerGroups)
          sink.group(group);
    }
  }

  void record(int64_t b, int64_t e, bool write, int64_t task, int64_t group) {
    split(b);
    split(e);
    fillGaps(b, e);
    for (auto it = segments.find(b); it != segments.end() && it->first < e; ++it) {
      Segment &seg = it->second;
      if (!write) {
        if (seg.readerGroups.empty() || seg.readerGroups.back() != group)
          seg.readerGroups.push_back(group);
        continue;
      }
      if (seg.writeGroup != group) {
        seg.writeGroup = group;
        seg.wholeGroupWrote = false;
        seg.writers.clear();
        seg.readerGroups.clear();
      }
      if (seg.wholeGroupWrote ||
          (!seg.writers.empty() && seg.writers.back() == task))
        continue;
      if (seg.writers.size() == kMaxWritersPerSegment) {
        seg.wholeGroupWrote = true;
        seg.writers.clear();
        continue;
      }
      seg.writers.push_back(task);
    }
    coalesce(b, e);
  }

private:
  static bool sameState(const Segment &a, const Segment &b) {
    return a.writeGroup == b.writeGroup &&
           a.wholeGroupWrote == b.wholeGroupWrote && a.writers == b.writers &&
           a.readerGroups == b.readerGroups;
  }

  /// Merges neighbours in and around [b, e) that record the same tasks, so
  /// boundaries left by earlier, finer tilings of reused bytes disappear
  /// and the map stays as small as the latest access pattern.
  void coalesce(int64_t b, int64_t e) {
    auto it = segments.lower_bound(b);
    if (it != segments.begin())
      --it;
    while (it != segments.end() && it->first <= e) {
      auto next = std::next(it);
      if (next != segments.end() && it->second.end == next->first &&
          sameState(it->second, next->second)) {
        it->second.end = next->second.end;
        segments.erase(next);
        continue;
      }
      it = next;
    }
  }

  void split(int64_t x) {
    auto it = segments.upper_bound(x);
    if (it == segments.begin())
      return;
    --it;
    if (it->first < x && x < it->second.end) {
      Segment tail = it->second;
      it->second.end = x;
      segments.emplace(x, std::move(tail));
    }
  }

  void fillGaps(int64_t b, int64_t e) {
    int64_t cursor = b;
    auto it = segments.lower_bound(b);
    while (cursor < e) {
      int64_t next = (it == segments.end()) ? e : std::min(e, it->first);
      if (cursor < next)
        segments.emplace(cursor, Segment{next});
      if (it == segments.end() || it->first >= e)
        break;
      cursor = it->second.end;
      ++it;
    }
  }

  std::map<int64_t, Segment> segments;
};

struct DeriveEventsPass
    : public mlir::loom::impl::LoomDeriveEventsBase<DeriveEventsPass> {
  void runOnOperation() override {
    getOperation().walk([&](GraphOp graph) {
      if (failed(derive(graph)))
        signalPassFailure();
    });
  }

  LogicalResult derive(GraphOp graph) {
    GraphBounds bounds = GraphBounds::of(graph);
    Block &body = graph.getBodyBlock();
    for (auto old : llvm::make_early_inc_range(body.getOps<ProgramOp>()))
      old.erase();

    // 1. Tasks in program order.
    SmallVector<TaskRecord> tasks;
    SmallVector<std::pair<int64_t, int64_t>> groups; // (first task, count)
    for (Operation &op : body) {
      if (!isLayerOp(&op))
        continue;
      auto partition = op.getAttrOfType<PartitionAttr>(kPartitionAttr);
      if (!partition)
        return op.emitOpError("is not partitioned; run loom-partition first");
      int64_t opId = op.getAttrOfType<IntegerAttr>(kOpIdAttr).getInt();
      for (auto [phase, count] : llvm::enumerate(partition.getTasks())) {
        groups.push_back({int64_t(tasks.size()), count});
        for (int64_t tile = 0; tile < count; ++tile)
          tasks.push_back({&op, opId, int64_t(phase), tile,
                           partition.getCostNs()[phase],
                           int64_t(groups.size() - 1)});
      }
    }

    // 2. Dependencies from regions, one phase at a time.
    std::map<int64_t, SegmentMap> roots;
    SmallVector<SmallVector<int64_t>> deps(tasks.size());
    SmallVector<SmallVector<std::pair<RootRange, bool>>> accesses(tasks.size());
    // Per consumer: the producer tasks it needs, and the producer phases it
    // needs whole. Stamps keep each list free of repeats.
    SmallVector<SmallVector<int64_t>> wholeGroups(tasks.size());
    struct Sink : DepSink {
      int64_t consumer = -1;
      SmallVector<int64_t> taskStamp, groupStamp;
      SmallVector<int64_t> *tasks = nullptr, *groups = nullptr;
      void task(int64_t p) override {
        if (taskStamp[p] != consumer) {
          taskStamp[p] = consumer;
          tasks->push_back(p);
        }
      }
      void group(int64_t g) override {
        if (groupStamp[g] != consumer) {
          groupStamp[g] = consumer;
          groups->push_back(g);
        }
      }
    } sink;
    sink.taskStamp.assign(tasks.size(), -1);
    sink.groupStamp.assign(groups.size(), -1);
    for (auto [groupIndex, group] : llvm::enumerate(groups)) {
      auto [first, count] = group;
      for (int64_t t = first; t < first + count; ++t) {
        if (failed(rangesOf(graph, tasks[t], bounds, accesses[t])))
          return failure();
        sink.consumer = t;
        sink.tasks = &deps[t];
        sink.groups = &wholeGroups[t];
        for (auto &[range, write] : accesses[t])
          roots[range.root].collect(range.begin, range.end, write, sink);
        // A phase needed whole covers its single tasks.
        llvm::erase_if(deps[t], [&](int64_t p) {
          return sink.groupStamp[tasks[p].group] == t;
        });
        llvm::sort(deps[t]);
        llvm::sort(wholeGroups[t]);
      }
      for (int64_t t = first; t < first + count; ++t)
        for (auto &[range, write] : accesses[t])
          roots[range.root].record(range.begin, range.end, write, t,
                                   int64_t(groupIndex));
      for (int64_t t = first; t < first + count; ++t)
        accesses[t].clear();
    }

    // 3. Events: per consumer, the producer tasks it needs, grouped by
    // producer phase; a whole phase shares one event.
    DenseMap<llvm::hash_code, SmallVector<int64_t>> bucket; // hash -> events
    SmallVector<SmallVector<int64_t>> eventMembers;
    SmallVector<SmallVector<int64_t>> waits(tasks.size()), triggers(tasks.size());
    SmallVector<int64_t> allMembers;
    auto eventFor = [&](ArrayRef<int64_t> members) {
      llvm::hash_code key = llvm::hash_combine_range(members.begin(), members.end());
      for (int64_t e : bucket[key])
        if (ArrayRef<int64_t>(eventMembers[e]) == members)
          return e;
      int64_t event = eventMembers.size();
      eventMembers.emplace_back(members.begin(), members.end());
      bucket[key].push_back(event);
      for (int64_t producer : members)
        triggers[producer].push_back(event);
      return event;
    };
    SmallVector<int64_t> wholeGroupEvent(groups.size(), -1);
    for (int64_t t = 0; t < int64_t(tasks.size()); ++t) {
      for (int64_t g : wholeGroups[t]) {
        if (wholeGroupEvent[g] < 0) {
          allMembers.clear();
          for (int64_t p = groups[g].first; p < groups[g].first + groups[g].second; ++p)
            allMembers.push_back(p);
          wholeGroupEvent[g] = eventFor(allMembers);
        }
        waits[t].push_back(wholeGroupEvent[g]);
      }
      ArrayRef<int64_t> d = deps[t];
      for (size_t i = 0; i < d.size();) {
        int64_t group = tasks[d[i]].group;
        size_t j = i;
        while (j < d.size() && tasks[d[j]].group == group)
          ++j;
        waits[t].push_back(eventFor(d.slice(i, j - i)));
        i = j;
      }
    }

    // 4. The loom.program.
    OpBuilder b(graph.getContext());
    b.setInsertionPoint(body.getTerminator());
    Location loc = graph.getLoc();
    auto program = b.create<ProgramOp>(
        loc, b.getI64IntegerAttr(graph.getTarget().getWorkers()),
        ScheduleModeAttr::get(b.getContext(), ScheduleMode::Static));
    Block *block = new Block();
    program.getBody().push_back(block);
    b.setInsertionPointToEnd(block);
    for (auto [id, members] : llvm::enumerate(eventMembers))
      b.create<EventOp>(loc, b.getI64IntegerAttr(id),
                        b.getI64IntegerAttr(members.size()));
    // Counters the bodies keep themselves: events that nothing waits on or
    // triggers (needs 0), so the runtime allocates and resets them with
    // the others.
    int64_t nextEvent = eventMembers.size();
    for (Operation &op : body) {
      op.removeAttr(kCountersAttr);
      auto partition = op.getAttrOfType<PartitionAttr>(kPartitionAttr);
      if (!isLayerOp(&op) || !partition)
        continue;
      int64_t counters = taskCounters(&op, partition, bounds);
      if (counters == 0)
        continue;
      op.setAttr(kCountersAttr, b.getDenseI64ArrayAttr({nextEvent, counters}));
      for (int64_t i = 0; i < counters; ++i)
        b.create<EventOp>(loc, b.getI64IntegerAttr(nextEvent++),
                          b.getI64IntegerAttr(0));
    }
    for (auto [id, task] : llvm::enumerate(tasks))
      b.create<TaskOp>(loc, b.getI64IntegerAttr(id),
                       b.getI64IntegerAttr(task.opId),
                       b.getI64IntegerAttr(task.phase),
                       b.getI64IntegerAttr(task.tile),
                       b.getDenseI64ArrayAttr(waits[id]),
                       b.getDenseI64ArrayAttr(triggers[id]),
                       b.getI64IntegerAttr(task.cost));
    return success();
  }

  /// The byte ranges task `task` touches, in root coordinates. Read-only
  /// graph arguments (input, weight, meta) cannot create dependencies.
  LogicalResult rangesOf(GraphOp graph, const TaskRecord &task,
                         const GraphBounds &bounds,
                         SmallVectorImpl<std::pair<RootRange, bool>> &out) {
    auto partition = task.op->getAttrOfType<PartitionAttr>(kPartitionAttr);
    SmallVector<Access> accesses;
    getTaskAccesses(task.op, partition, task.phase, task.tile, bounds, accesses);
    for (Access &access : accesses) {
      int64_t root, base, extent;
      if (!access.buffer) {
        auto offset = task.op->getAttrOfType<IntegerAttr>(kScratchOffsetAttr);
        if (!offset)
          return task.op->emitOpError(
              "has scratch but no placement; run loom-plan-memory first");
        root = kArena;
        base = offset.getInt();
        extent = partition.getScratchBytes();
      } else {
        auto located = locateRoot(access.buffer, bounds);
        if (!located)
          return task.op->emitOpError(
              "reads or writes a buffer with no placement; run "
              "loom-plan-memory first");
        std::tie(root, base) = *located;
        auto type = cast<MemRefType>(access.buffer.getType());
        extent = type.hasStaticShape() ? boundedBytes(type, bounds) : kUnbounded;
        if (root != kArena) {
          Role role = graph.getArgRole(root);
          if (role == Role::Input || role == Role::Weight || role == Role::Meta)
            continue;
        }
      }
      if (access.ranges.empty()) {
        out.push_back({{root, base, base + extent}, access.write});
        continue;
      }
      for (ByteRange r : access.ranges)
        out.push_back({{root, base + r.begin, base + r.end}, access.write});
    }
    return success();
  }
};
} // namespace
