//===- RuntimeCudaFakeArtifact.cpp - GPU artifacts for the fake driver ----===//
//
// A device artifact (DeviceAbi.h) whose code object is a LoomFakeCodeObject
// the fake driver runs on host threads. Which program it returns is chosen
// by $LOOM_FAKE_ARTIFACT each time the runtime asks, so one library serves
// every case:
//
//   chain (default)  7 "step" tasks round-robin on 3 workers, each waiting
//                    for the one before: x[6] = 100 * epoch + 7
//   bigsmem          chain with 100 KiB of dynamic shared memory
//   deadlock         a waits for b's event, b for a's
//   fail / crash     chain whose task 3 fails (code 42) / faults
//   stuck            worker 0's body ignores the abort flag for 1.5 s while
//                    worker 1 waits for it
//   sm100 / gfx      chain built for sm_100a / gfx950
//   nokernel         kernel_name the code object does not have
//   badimage         a code object the driver rejects
//   wide             9 workers
//   dynamic          chain scheduled dynamically (queue order: task ids)
//   inline           chain whose kernel takes its bindings by value
//                    (LOOM_DEVICE_INLINE_BINDINGS): launches on a stream
//   inline-fail      fail, by value;  inline-slow: chain whose task 3 takes
//                    300 ms, by value
//   inline-dynamic   dynamic, by value
//   abi3             chain built for device ABI version 3
//   badabi / badprogabi / null
//
//===----------------------------------------------------------------------===//
#include "kernels/common/DeviceAbi.h"
#include "tests/unit/RuntimeCudaFake.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// A task table in vectors; static storage keeps every pointer valid while
/// the library is loaded.
struct Table {
  int32_t numWorkers = 1;
  int32_t mode = LOOM_SCHEDULE_STATIC;
  std::vector<std::vector<int32_t>> lists, waits, triggers;
  std::vector<int32_t> needs;
  std::vector<std::string> names;

  int32_t add(const std::string &name, int32_t worker,
              std::vector<int32_t> waitOn, std::vector<int32_t> trigger) {
    lists.resize(numWorkers);
    lists[worker].push_back(static_cast<int32_t>(waits.size()));
    waits.push_back(std::move(waitOn));
    triggers.push_back(std::move(trigger));
    names.push_back(name);
    return static_cast<int32_t>(waits.size()) - 1;
  }
};

struct Built {
  LoomBufferDesc buffer{};
  std::vector<int32_t> workerBegin, workerTasks, waitBegin, waitEvents,
      triggerBegin, triggerEvents, needs;
  std::vector<std::string> names;
  std::vector<const char *> namePtrs;
  LoomProgramDesc desc{};
  LoomFakeCodeObject code{};
  LoomDeviceProgram device{};
};

void flatten(const std::vector<std::vector<int32_t>> &lists,
             std::vector<int32_t> &begin, std::vector<int32_t> &flat) {
  begin.assign(1, 0);
  for (const auto &list : lists) {
    flat.insert(flat.end(), list.begin(), list.end());
    begin.push_back(static_cast<int32_t>(flat.size()));
  }
}

const LoomDeviceProgram *build(const char *name, Table t) {
  auto *b = new Built; // one per request; a test loads a handful
  b->buffer = {"x", LOOM_ROLE_OUTPUT, LOOM_ELEM_I64, 1, {7}, 0};
  t.lists.resize(t.numWorkers);
  flatten(t.lists, b->workerBegin, b->workerTasks);
  if (t.mode == LOOM_SCHEDULE_DYNAMIC) {
    // The queue order: task ids, which chain() makes dependency order.
    for (size_t i = 0; i < b->workerTasks.size(); ++i)
      b->workerTasks[i] = static_cast<int32_t>(i);
  }
  flatten(t.waits, b->waitBegin, b->waitEvents);
  flatten(t.triggers, b->triggerBegin, b->triggerEvents);
  b->needs = t.needs;
  b->names = t.names;
  for (const std::string &n : b->names)
    b->namePtrs.push_back(n.c_str());
  LoomProgramDesc &d = b->desc;
  d.abi_version = LOOM_PROGRAM_ABI_VERSION;
  d.name = name;
  d.target = "fake";
  d.mode = t.mode;
  d.num_workers = t.numWorkers;
  d.num_tasks = static_cast<int32_t>(b->names.size());
  d.num_events = static_cast<int32_t>(b->needs.size());
  d.num_buffers = 1;
  d.buffers = &b->buffer;
  d.workspace_bytes = 1024;
  d.worker_begin = b->workerBegin.data();
  d.worker_tasks = b->workerTasks.data();
  d.task_wait_begin = b->waitBegin.data();
  d.wait_events = b->waitEvents.data();
  d.task_trigger_begin = b->triggerBegin.data();
  d.trigger_events = b->triggerEvents.data();
  d.event_needs = b->needs.data();
  d.task_names = b->namePtrs.data();
  d.run_task = nullptr; // bodies run on the "device"
  std::memcpy(b->code.magic, LOOM_FAKE_CUBIN_MAGIC,
              sizeof(LOOM_FAKE_CUBIN_MAGIC));
  b->code.kernel_name = LOOM_FAKE_KERNEL_NAME;
  b->code.program = &b->desc;
  LoomDeviceProgram &p = b->device;
  p.abi_version = LOOM_DEVICE_ABI_VERSION;
  p.program = &b->desc;
  p.arch = "sm_90a";
  p.code_object = &b->code;
  p.code_object_size = sizeof(b->code);
  p.kernel_name = LOOM_FAKE_KERNEL_NAME;
  p.threads_per_block = 128;
  p.dynamic_smem_bytes = 0;
  p.bodies = "fake";
  return &b->device;
}

/// 7 tasks on 3 workers; task i waits for event i - 1 and triggers event i.
/// `odd` names task 3 (fail/crash) instead of "step".
Table chain(const char *odd = nullptr) {
  Table t;
  t.numWorkers = 3;
  for (int32_t i = 0; i < 7; ++i) {
    std::string name = (odd && i == 3 ? std::string(odd) : "step") + "#" +
                       std::to_string(i) + "[0]";
    t.add(name, i % 3, i ? std::vector<int32_t>{i - 1} : std::vector<int32_t>{},
          {i});
    t.needs.push_back(1);
  }
  return t;
}

/// `p`, with a kernel that takes its bindings by value.
const LoomDeviceProgram *byValue(const LoomDeviceProgram *p) {
  auto *device = const_cast<LoomDeviceProgram *>(p);
  device->flags |= LOOM_DEVICE_INLINE_BINDINGS;
  const_cast<LoomFakeCodeObject *>(
      static_cast<const LoomFakeCodeObject *>(device->code_object))
      ->inline_bindings = 1;
  return device;
}

} // namespace

extern "C" __attribute__((visibility("default"))) const LoomDeviceProgram *
loom_device_program(void) {
  const char *env = std::getenv(LOOM_FAKE_ARTIFACT_ENV);
  std::string v = env ? env : "chain";
  if (v == "null")
    return nullptr;
  if (v == "inline")
    return byValue(build("inline", chain()));
  if (v == "inline-fail")
    return byValue(build("fail", chain("fail")));
  if (v == "inline-slow")
    return byValue(build("slow", chain("slow")));
  if (v == "inline-dynamic") {
    Table t = chain();
    t.mode = LOOM_SCHEDULE_DYNAMIC;
    return byValue(build("dynamic", t));
  }
  if (v == "deadlock") {
    Table t;
    t.numWorkers = 2;
    t.add("a#0[0]", 0, {1}, {0});
    t.add("b#1[0]", 1, {0}, {1});
    t.needs = {1, 1};
    return build("deadlock", t);
  }
  if (v == "stuck") {
    Table t;
    t.numWorkers = 2;
    t.add("stuck#0[0]", 0, {}, {0});
    t.add("after#1[0]", 1, {0}, {});
    t.needs = {1};
    return build("stuck", t);
  }
  if (v == "wide") {
    Table t;
    t.numWorkers = 9;
    for (int32_t w = 0; w < 9; ++w)
      t.add("noop#0[" + std::to_string(w) + "]", w, {}, {});
    return build("wide", t);
  }
  if (v == "fail" || v == "crash")
    return build(v == "fail" ? "fail" : "crash", chain(v.c_str()));
  if (v == "dynamic") {
    Table t = chain();
    t.mode = LOOM_SCHEDULE_DYNAMIC;
    return build("dynamic", t);
  }
  if (v == "profiled") {
    auto *p = const_cast<LoomDeviceProgram *>(build("profiled", chain()));
    p->flags = LOOM_DEVICE_PROFILED;
    return p;
  }
  if (v == "unrecorded") {
    auto *p = const_cast<LoomDeviceProgram *>(build("unrecorded", chain()));
    p->flags = LOOM_DEVICE_PROFILED;
    return p;
  }
  if (v == "badflags") {
    auto *p = const_cast<LoomDeviceProgram *>(build("badflags", chain()));
    p->flags = 0x80;
    return p;
  }

  auto *p = const_cast<LoomDeviceProgram *>(build("chain", chain()));
  if (v == "bigsmem")
    p->dynamic_smem_bytes = 100 * 1024;
  else if (v == "sm100")
    p->arch = "sm_100a";
  else if (v == "gfx")
    p->arch = "gfx950";
  else if (v == "nokernel")
    p->kernel_name = "loom_missing_kernel";
  else if (v == "badimage") {
    static const char kJunk[32] = "not a cubin";
    p->code_object = kJunk;
    p->code_object_size = sizeof(kJunk);
  } else if (v == "dynamic")
    const_cast<LoomProgramDesc *>(p->program)->mode = LOOM_SCHEDULE_DYNAMIC;
  else if (v == "badabi")
    p->abi_version = LOOM_DEVICE_ABI_VERSION + 1;
  else if (v == "abi3")
    p->abi_version = 3;
  else if (v == "badprogabi")
    const_cast<LoomProgramDesc *>(p->program)->abi_version =
        LOOM_PROGRAM_ABI_VERSION + 1;
  return p;
}
