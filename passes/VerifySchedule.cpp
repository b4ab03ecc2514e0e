//===- VerifySchedule.cpp - loom-verify-schedule: no wait can hang ---------===//
//
// Replays one launch: every worker walks its list (static) or takes the next
// task from the queue (dynamic), all workers co-resident; a task runs once
// every event it waits on has all its arrivals. If the replay stops before
// every task ran, the schedule deadlocks on the device too, and the
// diagnostic follows the waits from a stuck worker until they close a cycle.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TaskModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMVERIFYSCHEDULE
#include "passes/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct VerifySchedulePass
    : public mlir::loom::impl::LoomVerifyScheduleBase<VerifySchedulePass> {
  void runOnOperation() override {
    getOperation().walk([&](ProgramOp program) {
      if (failed(verify(program)))
        signalPassFailure();
    });
  }

  LogicalResult verify(ProgramOp program) {
    Block &block = program.getBodyBlock();
    DenseMap<int64_t, int64_t> needs, arrivals;
    for (EventOp event : block.getOps<EventOp>())
      if (!needs.try_emplace(event.getId(), event.getNeeds()).second)
        return event.emitOpError("event ") << event.getId() << " is defined twice";

    DenseMap<int64_t, TaskOp> tasks;
    SmallVector<TaskOp> queue;
    for (TaskOp task : block.getOps<TaskOp>()) {
      if (!tasks.try_emplace(task.getId(), task).second)
        return task.emitOpError("task ") << task.getId() << " is defined twice";
      queue.push_back(task);
      for (int64_t e : task.getWaits())
        if (!needs.count(e))
          return task.emitOpError("task ")
                 << task.getId() << " waits on event " << e
                 << ", which does not exist";
      for (int64_t e : task.getTriggers()) {
        if (!needs.count(e))
          return task.emitOpError("task ")
                 << task.getId() << " triggers event " << e
                 << ", which does not exist";
        ++arrivals[e];
      }
    }
    for (EventOp event : block.getOps<EventOp>())
      if (arrivals.lookup(event.getId()) != int64_t(event.getNeeds()))
        return event.emitOpError("event ")
               << event.getId() << " needs " << event.getNeeds()
               << " arrivals per launch but " << arrivals.lookup(event.getId())
               << " tasks trigger it";

    // Worker lists: each task exactly once. (The op verifier has checked
    // the lists themselves: ids in range and once each, none in dynamic
    // mode.)
    SmallVector<SmallVector<int64_t>> lists;
    DenseMap<int64_t, int64_t> workerOf;
    bool dynamic = program.getMode() == ScheduleMode::Dynamic;
    if (!dynamic) {
      for (WorkerOp worker : block.getOps<WorkerOp>()) {
        lists.emplace_back();
        for (int64_t t : worker.getTasks()) {
          if (!tasks.count(t))
            return worker.emitOpError("lists task ") << t << ", which does not exist";
          if (!workerOf.try_emplace(t, worker.getId()).second)
            return worker.emitOpError("task ")
                   << t << " is on worker " << workerOf[t] << " and on worker "
                   << worker.getId();
          lists.back().push_back(t);
        }
      }
      for (TaskOp task : queue)
        if (!workerOf.count(task.getId()))
          return task.emitOpError("task ") << task.getId() << " is on no worker";
    }
    // Co-running tasks need a worker each. In a dynamic schedule that is
    // enough: a worker blocks in one of them only once it holds it, and the
    // tasks that wait for their output come later in the queue, so the
    // group's tickets are all taken by workers that are free.
    SmallVector<SmallVector<int64_t>> groups = coRunningTasks(program);
    for (ArrayRef<int64_t> members : groups)
      if (int64_t(members.size()) > program.getWorkers())
        return tasks.lookup(members.front()).emitOpError("task ")
               << members.front() << " is one of " << members.size()
               << " tasks that must run at the same time, but the program "
                  "has "
               << program.getWorkers() << " workers";
    return dynamic ? replayDynamic(program, queue, needs)
                   : replayStatic(program, block, lists, workerOf, tasks, needs,
                                  groups);
  }

  static bool canRun(TaskOp task, const DenseMap<int64_t, int64_t> &counts,
                     const DenseMap<int64_t, int64_t> &needs, int64_t *blockedOn) {
    for (int64_t e : task.getWaits())
      if (counts.lookup(e) < needs.lookup(e)) {
        *blockedOn = e;
        return false;
      }
    return true;
  }

  static void run(TaskOp task, DenseMap<int64_t, int64_t> &counts) {
    for (int64_t e : task.getTriggers())
      ++counts[e];
  }

  LogicalResult replayStatic(ProgramOp program, Block &block,
                             ArrayRef<SmallVector<int64_t>> lists,
                             const DenseMap<int64_t, int64_t> &workerOf,
                             const DenseMap<int64_t, TaskOp> &tasks,
                             const DenseMap<int64_t, int64_t> &needs,
                             ArrayRef<SmallVector<int64_t>> groups) {
    SmallVector<int64_t> worker_ids;
    DenseMap<int64_t, size_t> listIndex; // worker id -> its list in `lists`
    for (WorkerOp w : block.getOps<WorkerOp>()) {
      listIndex[w.getId()] = worker_ids.size();
      worker_ids.push_back(w.getId());
    }
    DenseMap<int64_t, int64_t> counts;
    SmallVector<size_t> head(lists.size(), 0);
    // Co-running tasks wait for each other in their bodies: one runs only
    // when all are at the heads of their (distinct) workers' lists.
    DenseMap<int64_t, int64_t> groupOf;
    for (auto [g, members] : llvm::enumerate(groups))
      for (int64_t t : members) {
        groupOf[t] = g;
        for (int64_t other : members)
          if (other < t && workerOf.lookup(other) == workerOf.lookup(t))
            return tasks.lookup(t).emitOpError("task ")
                   << t << " must run at the same time as task " << other
                   << " (their bodies wait for each other) but both are on "
                      "worker "
                   << workerOf.lookup(t);
      }
    auto atHead = [&](int64_t t) {
      size_t w = listIndex.lookup(workerOf.lookup(t));
      return head[w] < lists[w].size() && lists[w][head[w]] == t;
    };
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t w = 0; w < lists.size(); ++w) {
        int64_t blocked;
        while (head[w] < lists[w].size() &&
               canRun(tasks.lookup(lists[w][head[w]]), counts, needs, &blocked)) {
          int64_t t = lists[w][head[w]];
          auto group = groupOf.find(t);
          if (group == groupOf.end()) {
            run(tasks.lookup(t), counts);
            ++head[w];
            progress = true;
            continue;
          }
          ArrayRef<int64_t> members = groups[group->second];
          if (!llvm::all_of(members, [&](int64_t m) {
                return atHead(m) && canRun(tasks.lookup(m), counts, needs, &blocked);
              }))
            break;
          for (int64_t m : members) {
            run(tasks.lookup(m), counts);
            ++head[listIndex.lookup(workerOf.lookup(m))];
          }
          progress = true;
        }
      }
    }
    // Position of each task in its worker's list, and the stuck heads.
    DenseMap<int64_t, size_t> indexOf, listOf;
    for (size_t w = 0; w < lists.size(); ++w)
      for (size_t i = 0; i < lists[w].size(); ++i) {
        indexOf[lists[w][i]] = i;
        listOf[lists[w][i]] = w;
      }
    int64_t start = -1;
    for (size_t w = 0; w < lists.size(); ++w)
      if (head[w] < lists[w].size()) {
        start = w;
        break;
      }
    if (start < 0)
      return success();

    // Follow: stuck worker -> task it waits at -> missing event -> an
    // untriggered producer -> that producer's worker, until a repeat.
    InFlightDiagnostic diag = program.emitOpError("deadlock:");
    DenseSet<int64_t> seen;
    int64_t w = start;
    while (seen.insert(w).second) {
      TaskOp task = tasks.lookup(lists[w][head[w]]);
      int64_t event = -1;
      if (canRun(task, counts, needs, &event)) {
        // Its inputs are there: it waits for a co-running task that is
        // not at the head of its worker's list.
        auto &members = groups[groupOf.lookup(task.getId())];
        const int64_t *late =
            llvm::find_if(members, [&](int64_t m) { return !atHead(m); });
        if (late == members.end()) // all at their heads: one lacks an input
          late = llvm::find_if(members, [&](int64_t m) {
            int64_t e;
            return !canRun(tasks.lookup(m), counts, needs, &e);
          });
        diag << " worker " << worker_ids[w] << " waits at task " << task.getId()
             << " for task " << *late << " (their bodies wait for each other) on worker "
             << workerOf.lookup(*late) << ";";
        w = listIndex.lookup(workerOf.lookup(*late));
        continue;
      }
      int64_t producer = -1;
      for (auto &[id, entry] : tasks)
        if (TaskOp candidate = entry;
            llvm::is_contained(candidate.getTriggers(), event) &&
            indexOf[id] >= head[listOf[id]])
          if (producer < 0 || id < producer)
            producer = id;
      diag << " worker " << worker_ids[w] << " waits at task " << task.getId()
           << " for event " << event;
      if (producer < 0) {
        diag << ", which no remaining task triggers;";
        return failure();
      }
      diag << ", which task " << producer << " on worker "
           << worker_ids[listOf[producer]] << " triggers;";
      w = listOf[producer];
    }
    diag << " the cycle closes at worker " << worker_ids[w];
    return failure();
  }

  LogicalResult replayDynamic(ProgramOp program, ArrayRef<TaskOp> queue,
                              const DenseMap<int64_t, int64_t> &needs) {
    // All workers hold one task each, taken in queue order.
    DenseMap<int64_t, int64_t> counts;
    SmallVector<TaskOp> held;
    size_t next = 0;
    int64_t workers = program.getWorkers();
    while (true) {
      while (int64_t(held.size()) < workers && next < queue.size())
        held.push_back(queue[next++]);
      bool progress = false;
      for (size_t i = 0; i < held.size();) {
        int64_t blocked;
        if (canRun(held[i], counts, needs, &blocked)) {
          run(held[i], counts);
          held.erase(held.begin() + i);
          progress = true;
        } else {
          ++i;
        }
      }
      if (held.empty() && next == queue.size())
        return success();
      if (!progress) {
        InFlightDiagnostic diag =
            program.emitOpError("deadlock in the dynamic queue: all ")
            << workers << " workers wait:";
        for (TaskOp task : held) {
          int64_t event = -1;
          canRun(task, counts, needs, &event);
          diag << " task " << task.getId() << " for event " << event << ";";
        }
        return failure();
      }
    }
  }
};
} // namespace
