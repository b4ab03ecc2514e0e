//===- Schedule.cpp - loom-schedule: per-worker task lists -----------------===//
//
// List scheduling: among ready tasks, the one with the longest remaining
// critical path (its cost plus its longest chain of dependents) goes to the
// worker that frees up first. Tasks are placed in an order where every task
// comes after its producers, and each worker runs its tasks in that order,
// so with all workers co-resident the earliest unfinished task can always
// run: the schedule cannot deadlock.
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

    // Producers of each task, through the events it waits on.
    DenseMap<int64_t, SmallVector<int64_t>> producersOfEvent;
    for (TaskOp task : tasks)
      for (int64_t e : task.getTriggers())
        producersOfEvent[e].push_back(task.getId());
    SmallVector<SmallVector<int64_t>> preds(n), succs(n);
    for (TaskOp task : tasks) {
      for (int64_t e : task.getWaits())
        for (int64_t p : producersOfEvent.lookup(e))
          preds[task.getId()].push_back(p);
      llvm::sort(preds[task.getId()]);
      auto &p = preds[task.getId()];
      p.erase(std::unique(p.begin(), p.end()), p.end());
      for (int64_t q : p)
        succs[q].push_back(task.getId());
    }

    // Longest path to the end; tasks only depend on lower ids when the
    // table comes from loom-derive-events, but do not rely on it.
    SmallVector<int64_t> order = topologicalOrder(n, preds, succs);
    if (int64_t(order.size()) != n)
      return program.emitOpError("the task graph has a cycle; no schedule exists");
    SmallVector<int64_t> level(n, 0);
    for (int64_t t : llvm::reverse(order)) {
      int64_t longest = 0;
      for (int64_t s : succs[t])
        longest = std::max(longest, level[s]);
      level[t] = tasks[t].getCost() + longest;
    }

    auto lower = [&](int64_t a, int64_t b) {
      return level[a] != level[b] ? level[a] < level[b] : a > b;
    };
    std::priority_queue<int64_t, std::vector<int64_t>, decltype(lower)> ready(lower);
    SmallVector<int64_t> waiting(n), earliest(n, 0);
    for (int64_t t = 0; t < n; ++t)
      if ((waiting[t] = preds[t].size()) == 0)
        ready.push(t);
    int64_t workers = program.getWorkers();
    using Slot = std::pair<int64_t, int64_t>; // (free at, worker)
    std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> free;
    for (int64_t w = 0; w < workers; ++w)
      free.push({0, w});
    SmallVector<SmallVector<int64_t>> lists(workers);
    SmallVector<int64_t> placed;
    while (!ready.empty()) {
      int64_t t = ready.top();
      ready.pop();
      auto [at, w] = free.top();
      free.pop();
      int64_t finish = std::max(at, earliest[t]) + tasks[t].getCost();
      free.push({finish, w});
      lists[w].push_back(t);
      placed.push_back(t);
      for (int64_t s : succs[t]) {
        earliest[s] = std::max(earliest[s], finish);
        if (--waiting[s] == 0)
          ready.push(s);
      }
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

  static SmallVector<int64_t> topologicalOrder(int64_t n,
                                               ArrayRef<SmallVector<int64_t>> preds,
                                               ArrayRef<SmallVector<int64_t>> succs) {
    SmallVector<int64_t> indegree(n), order;
    for (int64_t t = 0; t < n; ++t)
      if ((indegree[t] = preds[t].size()) == 0)
        order.push_back(t);
    for (size_t i = 0; i < order.size(); ++i)
      for (int64_t s : succs[order[i]])
        if (--indegree[s] == 0)
          order.push_back(s);
    return order;
  }
};
} // namespace
