//===- RuntimeTestProgram.cpp - A tiny host program library for tests -----===//
//
// Built three times as shared libraries for RuntimeHostTest's dlopen cases:
//  LOOM_TEST_PROGRAM_GOOD      exports a working program (below);
//  LOOM_TEST_PROGRAM_NOSYMBOL  exports it under another name;
//  LOOM_TEST_PROGRAM_BADABI    exports it with a future ABI version.
//
// The program: y = 2 * x + 1 on an f32 [rows <= 8, 4] matrix, rows given at
// bind time, in two phases on two workers. Phase A (tasks 0, 1) writes 2 * x
// for one half of the rows each into the workspace; phase B (tasks 2, 3)
// adds 1 and writes y, each for the half the *other* worker wrote, so the
// result is right only if the event orders the workers.
//
//===----------------------------------------------------------------------===//
#include "kernels/common/ProgramAbi.h"

#include <cstdint>

namespace {

constexpr int64_t kMaxRows = 8;
constexpr int64_t kCols = 4;

int32_t runTask(int32_t task, const LoomBinding *bindings, void *workspace) {
  const int64_t rows = bindings[0].dims[0];
  const int64_t half = (rows + 1) / 2;
  auto *scratch = static_cast<float *>(workspace);
  int32_t part = task % 2;
  int64_t begin = part == 0 ? 0 : half, end = part == 0 ? half : rows;
  if (task < 2) {
    const auto *x = static_cast<const float *>(bindings[0].data);
    for (int64_t i = begin * kCols; i < end * kCols; ++i)
      scratch[i] = 2.0f * x[i];
    return 0;
  }
  auto *y = static_cast<float *>(bindings[1].data);
  for (int64_t i = begin * kCols; i < end * kCols; ++i)
    y[i] = scratch[i] + 1.0f;
  return 0;
}

const LoomBufferDesc kBuffers[] = {
    {"x", LOOM_ROLE_INPUT, LOOM_ELEM_F32, 2, {-1, kCols}, kMaxRows},
    {"y", LOOM_ROLE_OUTPUT, LOOM_ELEM_F32, 2, {-1, kCols}, kMaxRows},
};
// Worker 0 runs tasks 0 (A, half 0) then 3 (B, half 1); worker 1 runs 1 (A,
// half 1) then 2 (B, half 0): each B reads what the other worker wrote.
const int32_t kWorkerBegin[] = {0, 2, 4};
const int32_t kWorkerTasks[] = {0, 3, 1, 2};
const int32_t kTaskWaitBegin[] = {0, 0, 0, 1, 2};
const int32_t kWaitEvents[] = {0, 0};
const int32_t kTaskTriggerBegin[] = {0, 1, 2, 2, 2};
const int32_t kTriggerEvents[] = {0, 0};
const int32_t kEventNeeds[] = {2};
const char *const kTaskNames[] = {"double#0[0]", "double#0[1]", "inc#1[0]",
                                  "inc#1[1]"};

#ifdef LOOM_TEST_PROGRAM_BADABI
constexpr uint32_t kAbiVersion = LOOM_PROGRAM_ABI_VERSION + 1;
#else
constexpr uint32_t kAbiVersion = LOOM_PROGRAM_ABI_VERSION;
#endif

LoomProgramDesc makeProgram() {
  LoomProgramDesc p = {};
  p.abi_version = kAbiVersion;
  p.name = "affine";
  p.target = "host";
  p.mode = LOOM_SCHEDULE_STATIC;
  p.num_workers = 2;
  p.num_tasks = 4;
  p.num_events = 1;
  p.num_buffers = 2;
  p.buffers = kBuffers;
  p.workspace_bytes = kMaxRows * kCols * sizeof(float);
  p.worker_begin = kWorkerBegin;
  p.worker_tasks = kWorkerTasks;
  p.task_wait_begin = kTaskWaitBegin;
  p.wait_events = kWaitEvents;
  p.task_trigger_begin = kTaskTriggerBegin;
  p.trigger_events = kTriggerEvents;
  p.event_needs = kEventNeeds;
  p.task_names = kTaskNames;
  p.run_task = runTask;
  return p;
}

const LoomProgramDesc kProgram = makeProgram();

} // namespace

#ifdef LOOM_TEST_PROGRAM_NOSYMBOL
extern "C" __attribute__((visibility("default"))) const LoomProgramDesc *
not_a_loom_program(void) {
  return &kProgram;
}
#else
extern "C" __attribute__((visibility("default"))) const LoomProgramDesc *
loom_host_program(void) {
  return &kProgram;
}
#endif
