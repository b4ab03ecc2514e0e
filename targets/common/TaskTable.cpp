//===- TaskTable.cpp - Collect and print the scheduled task table ----------===//
#include "targets/common/TaskTable.h"

#include "passes/TaskModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::loom;

std::string mlir::loom::elemEnumName(Type type) {
  if (type.isBF16())
    return "LOOM_ELEM_BF16";
  if (type.isF16())
    return "LOOM_ELEM_F16";
  if (type.isF32())
    return "LOOM_ELEM_F32";
  if (type.isInteger(32))
    return "LOOM_ELEM_I32";
  if (type.isInteger(64))
    return "LOOM_ELEM_I64";
  return "";
}

static StringRef opKind(Operation *op) {
  return op->getName().stripDialect();
}

FailureOr<TaskTable> TaskTable::build(GraphOp graph) {
  TaskTable table;
  table.graphName = graph.getSymName().str();
  table.target = graph.getTarget().getName().str();
  auto workspace = graph->getAttrOfType<IntegerAttr>(kWorkspaceBytesAttr);
  auto programs = graph.getBodyBlock().getOps<ProgramOp>();
  if (!workspace || programs.empty())
    return graph.emitOpError("is not scheduled: run the Loom pipeline "
                             "(loom-pipeline-<family>) before emitting");
  ProgramOp program = *programs.begin();
  table.workspaceBytes = workspace.getInt();
  table.workers = program.getWorkers();
  table.dynamic = program.getMode() == ScheduleMode::Dynamic;

  GraphBounds bounds = GraphBounds::of(graph);
  for (BlockArgument arg : graph.getBodyBlock().getArguments()) {
    auto type = cast<MemRefType>(arg.getType());
    TableBuffer buffer{graph.getArgName(arg.getArgNumber()).str(),
                       graph.getArgRole(arg.getArgNumber()),
                       elemEnumName(type.getElementType()), {}, 0};
    if (buffer.elem.empty())
      return graph.emitOpError("argument '")
             << buffer.name << "' has an element type no runtime supports";
    if (type.getRank() > 8)
      return graph.emitOpError("argument '") << buffer.name << "' has rank > 8";
    for (int64_t d : type.getShape())
      buffer.dims.push_back(ShapedType::isDynamic(d) ? -1 : d);
    if (!type.hasStaticShape()) {
      std::optional<ArrayRef<int64_t>> argBounds = graph.getArgBounds();
      buffer.bound = argBounds ? (*argBounds)[arg.getArgNumber()]
                               : bounds.dynamicExtent();
    }
    table.buffers.push_back(std::move(buffer));
  }

  DenseMap<int64_t, Operation *> opsById;
  for (Operation &op : graph.getBodyBlock())
    if (auto id = op.getAttrOfType<IntegerAttr>(kOpIdAttr))
      opsById[id.getInt()] = &op;

  Block &block = program.getBodyBlock();
  for (EventOp event : block.getOps<EventOp>()) {
    if (int64_t(event.getId()) >= int64_t(table.eventNeeds.size()))
      table.eventNeeds.resize(event.getId() + 1, 0);
    table.eventNeeds[event.getId()] = event.getNeeds();
  }
  for (TaskOp task : block.getOps<TaskOp>()) {
    Operation *op = opsById.lookup(task.getOp());
    if (!op)
      return task.emitOpError("refers to op ")
             << task.getOp() << ", which the graph does not have";
    if (int64_t(task.getId()) >= int64_t(table.tasks.size()))
      table.tasks.resize(task.getId() + 1);
    TableTask &entry = table.tasks[task.getId()];
    entry.op = op;
    entry.phase = task.getPhase();
    entry.tile = task.getTile();
    entry.waits.assign(task.getWaits().begin(), task.getWaits().end());
    entry.triggers.assign(task.getTriggers().begin(), task.getTriggers().end());
    entry.name = (opKind(op) + "#" + Twine(task.getOp()) + ".p" +
                  Twine(task.getPhase()) + "[" + Twine(task.getTile()) + "]")
                     .str();
    table.queue.push_back(task.getId());
  }
  for (auto [i, task] : llvm::enumerate(table.tasks))
    if (!task.op)
      return program.emitOpError("has no task ") << i;
  if (!table.dynamic) {
    table.workerLists.resize(table.workers);
    for (WorkerOp worker : block.getOps<WorkerOp>())
      table.workerLists[worker.getId()].assign(worker.getTasks().begin(),
                                               worker.getTasks().end());
  }
  return table;
}

namespace {
void printIntArray(llvm::raw_ostream &os, StringRef name,
                   ArrayRef<int64_t> values,
                   StringRef qualifier = "static const") {
  os << qualifier << " int32_t " << name << "[] = {";
  for (auto [i, v] : llvm::enumerate(values)) {
    if (i % 16 == 0)
      os << "\n   ";
    os << " " << v << ",";
  }
  // Never an empty initializer list: C++ rejects zero-length arrays.
  if (values.empty())
    os << " 0";
  os << "};\n";
}

/// Flattens lists into (begin offsets, values).
void printRagged(llvm::raw_ostream &os, StringRef beginName,
                 StringRef valuesName,
                 ArrayRef<const std::vector<int64_t> *> lists,
                 StringRef qualifier = "static const") {
  SmallVector<int64_t> begin{0}, values;
  for (const std::vector<int64_t> *list : lists) {
    values.append(list->begin(), list->end());
    begin.push_back(values.size());
  }
  printIntArray(os, beginName, begin, qualifier);
  printIntArray(os, valuesName, values, qualifier);
}
} // namespace

void TaskTable::printArrays(llvm::raw_ostream &os) const {
  os << "static const LoomBufferDesc kBuffers[] = {\n";
  for (const TableBuffer &b : buffers) {
    os << "    {\"" << b.name << "\", " << int(b.role) << ", " << b.elem << ", "
       << b.dims.size() << ", {";
    llvm::interleaveComma(b.dims, os);
    os << "}, " << b.bound << "},\n";
  }
  os << "};\n";
  printScheduleArrays(os, "static const", "k");
  os << "static const char *const kTaskNames[] = {";
  for (auto [i, t] : llvm::enumerate(tasks))
    os << (i % 8 == 0 ? "\n   " : "") << " \"" << t.name << "\",";
  os << "};\n";
}

void TaskTable::printScheduleArrays(llvm::raw_ostream &os,
                                    StringRef qualifier,
                                    StringRef prefix) const {
  auto name = [&](StringRef base) { return (prefix + base).str(); };
  SmallVector<const std::vector<int64_t> *> waits, triggers;
  for (const TableTask &t : tasks) {
    waits.push_back(&t.waits);
    triggers.push_back(&t.triggers);
  }
  if (dynamic) {
    printIntArray(os, name("WorkerBegin"), {0, int64_t(queue.size())}, qualifier);
    printIntArray(os, name("WorkerTasks"), queue, qualifier);
  } else {
    SmallVector<const std::vector<int64_t> *> lists;
    for (const std::vector<int64_t> &list : workerLists)
      lists.push_back(&list);
    printRagged(os, name("WorkerBegin"), name("WorkerTasks"), lists, qualifier);
  }
  printRagged(os, name("TaskWaitBegin"), name("WaitEvents"), waits, qualifier);
  printRagged(os, name("TaskTriggerBegin"), name("TriggerEvents"), triggers,
              qualifier);
  printIntArray(os, name("EventNeeds"), eventNeeds, qualifier);
}

void TaskTable::printDescriptor(llvm::raw_ostream &os,
                                StringRef runTask) const {
  os << "static const LoomProgramDesc kProgram = {\n"
     << "    LOOM_PROGRAM_ABI_VERSION, \"" << graphName << "\", \"" << target
     << "\",\n"
     << "    " << (dynamic ? "LOOM_SCHEDULE_DYNAMIC" : "LOOM_SCHEDULE_STATIC")
     << ", " << workers << ", " << tasks.size() << ", " << eventNeeds.size()
     << ", " << buffers.size() << ",\n"
     << "    kBuffers, " << workspaceBytes << "LL,\n"
     << "    kWorkerBegin, kWorkerTasks, kTaskWaitBegin, kWaitEvents,\n"
     << "    kTaskTriggerBegin, kTriggerEvents, kEventNeeds, kTaskNames,\n"
     << "    " << runTask << "};\n";
}

llvm::json::Object TaskTable::metadataJson() const {
  auto array = [](ArrayRef<int64_t> values) {
    llvm::json::Array out;
    for (int64_t v : values)
      out.push_back(v);
    return out;
  };
  llvm::json::Array jsonBuffers;
  for (const TableBuffer &b : buffers)
    jsonBuffers.push_back(llvm::json::Object{{"name", b.name},
                                             {"role", stringifyRole(b.role).str()},
                                             {"elem", b.elem},
                                             {"dims", array(b.dims)},
                                             {"bound", b.bound}});
  llvm::json::Array jsonTasks;
  for (const TableTask &t : tasks)
    jsonTasks.push_back(llvm::json::Object{{"name", t.name},
                                           {"waits", array(t.waits)},
                                           {"triggers", array(t.triggers)}});
  llvm::json::Object taskTable{{"tasks", std::move(jsonTasks)},
                               {"event_needs", array(eventNeeds)}};
  if (dynamic) {
    taskTable["queue"] = array(queue);
  } else {
    llvm::json::Array lists;
    for (const std::vector<int64_t> &list : workerLists)
      lists.push_back(array(list));
    taskTable["worker_tasks"] = std::move(lists);
  }
  return llvm::json::Object{
      {"symbol", graphName},
      {"target", target},
      {"abi_version", 1},
      {"schedule", dynamic ? "dynamic" : "static"},
      {"workers", workers},
      {"tasks", int64_t(tasks.size())},
      {"events", int64_t(eventNeeds.size())},
      {"workspace_bytes", workspaceBytes},
      {"buffers", std::move(jsonBuffers)},
      {"task_table", std::move(taskTable)}};
}

void TaskTable::printMetadataJson(llvm::raw_ostream &os) const {
  mlir::loom::printMetadataJson(os, llvm::json::Value(metadataJson()));
}

static void printJson(llvm::raw_ostream &os, const llvm::json::Value &v,
                      unsigned indent) {
  if (const llvm::json::Object *object = v.getAsObject()) {
    // Keys sorted, as llvm::json prints them: stable output.
    std::vector<const llvm::json::Object::value_type *> entries;
    for (const auto &entry : *object)
      entries.push_back(&entry);
    llvm::sort(entries, [](auto *a, auto *b) { return a->first < b->first; });
    os << "{";
    for (auto [i, entry] : llvm::enumerate(entries)) {
      os << (i ? ",\n" : "\n");
      os.indent(indent + 2) << llvm::formatv("{0}", llvm::json::Value(entry->first))
                            << ": ";
      printJson(os, entry->second, indent + 2);
    }
    os << "\n";
    os.indent(indent) << "}";
    return;
  }
  const llvm::json::Array *array = v.getAsArray();
  if (!array || llvm::all_of(*array, [](const llvm::json::Value &e) {
        return !e.getAsArray() && !e.getAsObject();
      })) {
    os << llvm::formatv("{0}", v);
    return;
  }
  os << "[";
  for (auto [i, element] : llvm::enumerate(*array)) {
    os << (i ? ",\n" : "\n");
    os.indent(indent + 2) << llvm::formatv("{0}", element);
  }
  os << "\n";
  os.indent(indent) << "]";
}

void mlir::loom::printMetadataJson(llvm::raw_ostream &os,
                                   const llvm::json::Value &metadata) {
  printJson(os, metadata, 0);
  os << "\n";
}
