//===- ProgramTableFuzzer.cpp - libFuzzer target of the task-table check ---===//
//
// Any bytes describe a program's task table (runtime/src/ProgramTable.h):
// counts, schedule, edges, event needs and buffers, every array as long as
// the descriptor's own counts and begin arrays say, as a library that keeps
// the ABI's contract would lay them out (a begin array whose last entry is
// negative or past 1024 comes with an empty array). ProgramTable::create
// must accept it or refuse it with a message, and never crash, read out of
// bounds, overflow or leak (built with ASan and UBSan). Inputs that once
// broke it are kept in program-corpus/ and run on every ctest.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/ProgramTable.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

/// Reads the input as small integers; past its end, zeros.
struct Bytes {
  const uint8_t *data;
  size_t size, at = 0;
  int32_t u8() { return at < size ? data[at++] : 0; }
  /// Mostly small values, now and then a boundary one.
  int32_t value() {
    const int32_t b = u8();
    switch (b) {
    case 250: return -1;
    case 251: return INT32_MAX;
    case 252: return INT32_MIN;
    case 253: return 1 << 20;
    default: return b % 24 - 2;
    }
  }
  std::vector<int32_t> values(size_t n) {
    std::vector<int32_t> v(n);
    for (int32_t &x : v)
      x = value();
    return v;
  }
};

/// The length an array has when `begin`'s last entry claims it.
size_t claimed(const std::vector<int32_t> &begin) {
  const int32_t last = begin.empty() ? 0 : begin.back();
  return last >= 0 && last <= 1024 ? size_t(last) : 0;
}

int32_t runNothing(int32_t, const LoomBinding *, void *) { return 0; }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in{data, size};
  LoomProgramDesc d = {};
  d.abi_version = LOOM_PROGRAM_ABI_VERSION;
  d.name = "fuzz";
  d.target = "host";
  d.mode = in.u8() % 3; // 2: neither static nor dynamic
  d.num_workers = in.u8() % 6 - 1;
  d.num_tasks = in.u8() % 12 - 1;
  d.num_events = in.u8() % 8 - 1;
  d.num_buffers = in.u8() % 4 - 1;
  d.workspace_bytes = in.value();
  d.run_task = in.u8() % 16 ? runNothing : nullptr;

  const size_t tasks = d.num_tasks > 0 ? size_t(d.num_tasks) : 0;
  const size_t workers = d.num_workers > 0 ? size_t(d.num_workers) : 0;
  const size_t events = d.num_events > 0 ? size_t(d.num_events) : 0;
  const size_t buffers = d.num_buffers > 0 ? size_t(d.num_buffers) : 0;
  std::vector<int32_t> workerBegin = in.values(workers + 1);
  std::vector<int32_t> workerTasks = in.values(tasks);
  std::vector<int32_t> waitBegin = in.values(tasks + 1);
  std::vector<int32_t> waits = in.values(claimed(waitBegin));
  std::vector<int32_t> triggerBegin = in.values(tasks + 1);
  std::vector<int32_t> triggers = in.values(claimed(triggerBegin));
  std::vector<int32_t> needs = in.values(events);
  std::vector<std::string> names(tasks);
  std::vector<const char *> namePtrs(tasks);
  for (size_t t = 0; t < tasks; ++t) {
    names[t] = "t" + std::to_string(in.u8());
    namePtrs[t] = in.u8() % 8 ? names[t].c_str() : nullptr;
  }
  const char *bufferNames[] = {"a", "b", "a", "c"};
  std::vector<LoomBufferDesc> bufs(buffers);
  for (LoomBufferDesc &b : bufs) {
    b.name = in.u8() % 8 ? bufferNames[in.u8() % 4] : nullptr;
    b.role = in.value();
    b.elem = in.value();
    b.rank = in.u8() % 7 - 1;
    for (int64_t &dim : b.dims)
      dim = in.value();
    b.bound = in.value();
  }
  // Now and then a null array where the counts say there is one.
  auto maybe = [&](const std::vector<int32_t> &v) {
    return in.u8() % 16 ? v.data() : nullptr;
  };
  d.worker_begin = maybe(workerBegin);
  d.worker_tasks = maybe(workerTasks);
  d.task_wait_begin = maybe(waitBegin);
  d.wait_events = maybe(waits);
  d.task_trigger_begin = maybe(triggerBegin);
  d.trigger_events = maybe(triggers);
  d.event_needs = maybe(needs);
  d.task_names = namePtrs.data();
  d.buffers = in.u8() % 16 ? bufs.data() : nullptr;

  std::shared_ptr<const loom::rt::ProgramTable> table;
  const loom::rt::Status status =
      loom::rt::ProgramTable::create(d, "fuzz input", 0, &table);
  if (status.ok() != bool(table))
    std::abort(); // a table with an error, or neither
  if (!status.ok() && status.message().empty())
    std::abort();
  if (table)
    for (int32_t t = 0; t < table->numTasks(); ++t)
      (void)table->describeTask(t);
  return 0;
}
