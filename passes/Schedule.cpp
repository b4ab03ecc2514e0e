//===- Schedule.cpp - loom-schedule: per-worker task lists -----------------===//
//
// List scheduling: among ready tasks, the one with the longest remaining
// critical path (its cost plus its longest chain of dependents) goes to the
// worker that frees up first. Tasks are placed in an order where every task
// comes after its producers, and each worker runs its tasks in that order,
// so with all workers co-resident the earliest unfinished task can always
// run: the schedule cannot deadlock. Tasks whose bodies wait for each
// other (coRunningTasks) are placed together, each on its own worker.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TaskModel.h"

#include "mlir/IR/Builders.h"

#include <queue>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSCHEDULE
#include "passes/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct SchedulePass : public mlir::loom::impl::LoomScheduleBase<SchedulePass> {
  using LoomScheduleBase::LoomScheduleBase;

  void runOnOperation() override {
    if (mode != "static" && mode != "dynamic") {
      getOperation().emitError("loom-schedule: unknown mode '")
          << mode << "'; expected 'static' or 'dynamic'";
      return signalPassFailure();
    }
    getOperation().walk([&](ProgramOp program) {
      if (failed(schedule(program)))
        signalPassFailure();
    });
  }

  LogicalResult schedule(ProgramOp program) {
    Block &block = program.getBodyBlock();
    for (auto worker : llvm::make_early_inc_range(block.getOps<WorkerOp>()))
      worker.erase();
    SmallVector<TaskOp> tasks(block.getOps<TaskOp>());
    int64_t n = tasks.size();
    for (auto [i, task] : llvm::enumerate(tasks))
      if (int64_t(task.getId()) != int64_t(i))
        return task.emitOpError("task ids must be 0..N-1 in order");

    // Work at the level of events, never task-to-task edges: a phase that
    // waits for a whole phase would otherwise cost |phase|^2 edges.
    int64_t numEvents = 0;
    for (TaskOp task : tasks) {
      for (int64_t e : task.getWaits())
        numEvents = std::max(numEvents, e + 1);
      for (int64_t e : task.getTriggers())
        numEvents = std::max(numEvents, e + 1);
    }
    SmallVector<SmallVector<int64_t>> waiters(numEvents);
    SmallVector<int64_t> producers(numEvents, 0);
    for (TaskOp task : tasks) {
      for (int64_t e : task.getWaits())
        waiters[e].push_back(task.getId());
      for (int64_t e : task.getTriggers())
        ++producers[e];
    }

    // A topological order (Kahn's, through event completion).
    SmallVector<int64_t> order, pending(n), remaining(producers);
    for (int64_t t = 0; t < n; ++t)
      if ((pending[t] = tasks[t].getWaits().size()) == 0)
        order.push_back(t);
    for (size_t i = 0; i < order.size(); ++i)
      for (int64_t e : tasks[order[i]].getTriggers())
        if (--remaining[e] == 0)
          for (int64_t w : waiters[e])
            if (--pending[w] == 0)
              order.push_back(w);
    if (int64_t(order.size()) != n)
      return program.emitOpError(
          "the task graph has a cycle or an event with too few triggers; no "
          "schedule exists");

    // Longest path to the end, through the events each task triggers.
    SmallVector<int64_t> level(n, 0), eventLevel(numEvents, -1);
    for (int64_t t : llvm::reverse(order)) {
      int64_t longest = 0;
      for (int64_t e : tasks[t].getTriggers()) {
        if (eventLevel[e] < 0) {
          eventLevel[e] = 0;
          for (int64_t w : waiters[e])
            eventLevel[e] = std::max(eventLevel[e], level[w]);
        }
        longest = std::max(longest, eventLevel[e]);
      }
      level[t] = tasks[t].getCost() + longest;
    }

    // List scheduling: the ready task with the longest path goes to the
    // worker that frees up first.
    auto lower = [&](int64_t a, int64_t b) {
      return level[a] != level[b] ? level[a] < level[b] : a > b;
    };
    std::priority_queue<int64_t, std::vector<int64_t>, decltype(lower)> ready(lower);
    SmallVector<int64_t> eventDone(numEvents, 0);
    remaining.assign(producers.begin(), producers.end());
    for (int64_t t = 0; t < n; ++t)
      if ((pending[t] = tasks[t].getWaits().size()) == 0)
        ready.push(t);
    int64_t workers = program.getWorkers();
    // Co-running tasks (their bodies wait for each other) go out together,
    // each to its own worker: the first of them to come up places all.
    DenseMap<int64_t, int64_t> groupOf;
    SmallVector<SmallVector<int64_t>> groups = coRunningTasks(program);
    for (auto [g, members] : llvm::enumerate(groups)) {
      if (int64_t(members.size()) > workers)
        return program.emitOpError("op ")
               << tasks[members.front()].getOp() << " has " << members.size()
               << " tasks that must all run at once, but there are only "
               << workers << " workers";
      for (int64_t t : members) {
        if (tasks[t].getWaits() != tasks[members.front()].getWaits())
          return tasks[t].emitOpError("must run with task ")
                 << members.front() << " but waits for other events";
        groupOf[t] = g;
      }
    }
    DenseSet<int64_t> placedGroups;
    using Slot = std::pair<int64_t, int64_t>; // (free at, worker)
    std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> free;
    for (int64_t w = 0; w < workers; ++w)
      free.push({0, w});
    SmallVector<SmallVector<int64_t>> lists(workers);
    SmallVector<int64_t> placed;
    // Places t on the worker that frees up first; then its triggers.
    SmallVector<Slot> taken;
    auto place = [&](int64_t t, int64_t startAt) {
      auto [at, w] = free.top();
      free.pop();
      int64_t finish = std::max(at, startAt) + tasks[t].getCost();
      taken.push_back({finish, w});
      lists[w].push_back(t);
      placed.push_back(t);
      return finish;
    };
    auto release = [&](int64_t t, int64_t finish) {
      for (int64_t e : tasks[t].getTriggers()) {
        eventDone[e] = std::max(eventDone[e], finish);
        if (--remaining[e] == 0)
          for (int64_t waiter : waiters[e])
            if (--pending[waiter] == 0)
              ready.push(waiter);
      }
    };
    while (!ready.empty()) {
      int64_t t = ready.top();
      ready.pop();
      auto group = groupOf.find(t);
      if (group != groupOf.end() && !placedGroups.insert(group->second).second)
        continue; // placed with the first of its group
      // A group's members wait for the same inputs (one phase of one op).
      int64_t earliest = 0;
      for (int64_t e : tasks[t].getWaits())
        earliest = std::max(earliest, eventDone[e]);
      SmallVector<int64_t> members{t};
      if (group != groupOf.end())
        members.assign(groups[group->second]);
      SmallVector<int64_t> finishes;
      taken.clear();
      for (int64_t m : members)
        finishes.push_back(place(m, earliest));
      for (Slot s : taken)
        free.push(s); // only now: each member on its own worker
      for (auto [m, finish] : llvm::zip(members, finishes))
        release(m, finish);
    }

    OpBuilder b(program.getContext());
    if (mode == "dynamic") {
      program.setModeAttr(ScheduleModeAttr::get(b.getContext(), ScheduleMode::Dynamic));
      for (int64_t t : placed)
        tasks[t]->moveBefore(&block, block.end());
      return success();
    }
    program.setModeAttr(ScheduleModeAttr::get(b.getContext(), ScheduleMode::Static));
    b.setInsertionPointToEnd(&block);
    for (int64_t w = 0; w < workers; ++w)
      b.create<WorkerOp>(program.getLoc(), b.getI64IntegerAttr(w),
                         b.getDenseI64ArrayAttr(lists[w]));
    return success();
  }

};
} // namespace
