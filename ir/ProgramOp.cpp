//===- ProgramOp.cpp - loom.program: the task table's verifier ------------===//
//
// A task table is read by every emitter and, through them, by the device
// loops, which index with its numbers unchecked. So every number is checked
// here, against the table and the graph it belongs to: ids and counts are
// not negative, a task names a layer op of the graph and a phase and tile
// that op has, a worker is one of the program's. Whether the waits can all
// be met is loom-verify-schedule's question.
//
//===----------------------------------------------------------------------===//
#include "ir/LoomOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The layer ops of `graph` by their `loom.op_id`, with their partition
/// (null when the op has not been partitioned).
DenseMap<int64_t, PartitionAttr> layerOps(Operation *graph) {
  DenseMap<int64_t, PartitionAttr> ops;
  for (Operation &op : graph->getRegion(0).front())
    if (auto id = op.getAttrOfType<IntegerAttr>(kOpIdAttr))
      ops[id.getInt()] = op.getAttrOfType<PartitionAttr>(kPartitionAttr);
  return ops;
}

/// Whether event `id` is one of the counters a layer op's bodies keep
/// (kCountersAttr = [first, count]).
bool isBodyCounter(Operation *graph, int64_t id) {
  for (Operation &op : graph->getRegion(0).front())
    if (auto range = op.getAttrOfType<DenseI64ArrayAttr>(kCountersAttr))
      if (range.size() == 2 && id >= range[0] && id < range[0] + range[1])
        return true;
  return false;
}

LogicalResult verifyTask(TaskOp task,
                         const DenseMap<int64_t, PartitionAttr> &ops) {
  // ODS hands I64Attr values back unsigned: read them as what they are.
  const int64_t id = task.getId(), opId = task.getOp(),
                phase = task.getPhase(), tile = task.getTile(),
                cost = task.getCost();
  for (auto [name, value] : {std::pair<const char *, int64_t>{"id", id},
                             {"op", opId},
                             {"phase", phase},
                             {"tile", tile},
                             {"cost", cost}})
    if (value < 0)
      return task.emitOpError() << name << " must not be negative, got "
                                << value;
  auto op = ops.find(opId);
  if (op == ops.end())
    return task.emitOpError()
           << "op(" << opId
           << ") names no layer op of the graph (no loom.op_id of that value)";
  PartitionAttr partition = op->second;
  if (!partition)
    return success();
  ArrayRef<int64_t> tiles = partition.getTasks();
  if (phase >= static_cast<int64_t>(tiles.size()))
    return task.emitOpError() << "phase(" << phase << ") is past op " << opId
                              << "'s " << tiles.size() << " phase(s)";
  if (tile >= tiles[phase])
    return task.emitOpError() << "tile(" << tile << ") is past phase " << phase
                              << " of op " << opId << "'s " << tiles[phase]
                              << " tile(s)";
  return success();
}

} // namespace

LogicalResult ProgramOp::verify() {
  const int64_t workers = getWorkers();
  if (workers < 1)
    return emitOpError() << "workers must be at least 1, got " << workers;
  const DenseMap<int64_t, PartitionAttr> ops = layerOps((*this)->getParentOp());
  llvm::DenseSet<int64_t> workerIds;
  for (Operation &child : getBodyBlock()) {
    if (auto event = dyn_cast<EventOp>(child)) {
      const int64_t id = event.getId(), needs = event.getNeeds();
      if (id < 0)
        return event.emitOpError() << "id must not be negative, got " << id;
      // needs(0): a counter a body keeps, which no task triggers.
      if (needs < 0 || (needs == 0 && !isBodyCounter((*this)->getParentOp(), id)))
        return event.emitOpError()
               << "needs must be at least 1 (an event is triggered) unless "
                  "the event is one of a layer op's loom.counters, got "
               << needs;
    } else if (auto task = dyn_cast<TaskOp>(child)) {
      if (failed(verifyTask(task, ops)))
        return failure();
    } else if (auto worker = dyn_cast<WorkerOp>(child)) {
      const int64_t id = worker.getId();
      if (getMode() == ScheduleMode::Dynamic)
        return worker.emitOpError()
               << "a dynamic program has no worker lists (its workers take "
                  "tasks from one queue)";
      if (id < 0 || id >= workers)
        return worker.emitOpError() << "id " << id
                                    << " is not one of the program's "
                                    << workers << " workers";
      if (!workerIds.insert(id).second)
        return worker.emitOpError() << "worker " << id << " has two lists";
      for (int64_t t : worker.getTasks())
        if (t < 0)
          return worker.emitOpError()
                 << "task ids must not be negative, got " << t;
    }
  }
  return success();
}
