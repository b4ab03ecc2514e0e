//===- RuntimeHipTest.cpp - The HIP backend, with and without a GPU -------===//
//
// Built three ways from this one file:
//
//  * loom-runtime-hip-tests (the runtime's sources compiled in, so its
//    internal helpers can be tested too):
//      HipNoRuntime   what a machine without ROCm gets: device_count("hip")
//                     is 0 / BACKEND_UNAVAILABLE naming every path tried;
//      HipChecks      the pure helpers with made-up devices: gfx arch
//                     matching with target features, block shape, the
//                     co-residency refusal, timeout cycles, artifact checks;
//      HipFake        the whole backend against the fake runtime below:
//                     devices, memory, every load refusal, static and
//                     dynamic launches, binding checks, the watchdog, the
//                     kernel's own timeout, failed tasks, a faulting kernel,
//                     a wedged one;
//      RuntimeHipGpu  (label gpu-amd) a real AMD GPU: skipped, saying why,
//                     when there is none; loads $LOOM_HIP_TEST_ARTIFACT if set.
//  * with LOOM_HIP_FAKE_RUNTIME: loom-rt-fakehip-full, a shared library that is
//    both a fake libamdhip64 (LOOM_HIP_RUNTIME points the runtime at it) and
//    a fake GPU artifact (it exports loom_device_program). Its "GPU" is host
//    memory and its "kernel" runs each worker block on a host thread,
//    interpreting the task table the fake code object points to, following
//    DeviceAbi.h and kernels/nvidia/Interpreter.cuh: event counters and the
//    dynamic-mode queue, LoomWorkerStatus records (waits published, -1/-2 for
//    a wait left, the failed body's code), the abort flag, timeout_cycles
//    (its clock64 runs at 1 GHz: a cycle is a ns).
//  * with LOOM_HIP_FAKE_RUNTIME and LOOM_HIP_FAKE_OLD: loom-rt-fakehip-old,
//    a runtime without hipGetDevicePropertiesR0600 (as ROCm 5 was).
//
// Task bodies of the fake kernel are chosen by the task name's prefix:
//   step   x[t] = (t == 0 ? 100 * epoch : x[t - 1]) + 1, x = binding 0 (i64)
//   fail   the body fails with code 42
//   crash  the kernel faults: the launch ends with hipErrorIllegalAddress
//   stuck  the body sleeps 1.5 s and ignores the abort flag
//   other  nothing
//
//===----------------------------------------------------------------------===//
#include "kernels/common/DeviceAbi.h"

#include <cstdint>

extern "C" {

#define LOOM_FAKE_HIP_MAGIC "LOOMFAKEHSACO01"
#define LOOM_FAKE_HIP_KERNEL "loom_fake_kernel"
/* Which program loom_device_program returns; read at each call. */
#define LOOM_FAKE_HIP_ARTIFACT_ENV "LOOM_FAKE_HIP_ARTIFACT"

/* What a fake artifact's code_object points to. */
typedef struct LoomFakeHipCodeObject {
  char magic[16];
  const char *kernel_name;        /* the module's one kernel */
  const LoomProgramDesc *program; /* what that kernel interprets */
} LoomFakeHipCodeObject;

typedef struct LoomFakeHipConfig {
  int init_result; /* what hipInit returns */
  int devices;
  int cu_count;
  char arch[64]; /* gcnArchName */
  int blocks_per_cu;
  int cooperative;
  int can_map_host;
  int max_shared;   /* LDS per block */
  int props_broken; /* props disagree with the attributes */
  int shared_queue; /* other streams' work waits while a kernel runs */
  int clock_khz;    /* clock64 rate it reports; 0: 1 GHz, its real rate */
  int stream_mem_ops; /* 0: hipStreamWaitValue32 returns NOT_SUPPORTED */
  int launch_call_us; /* host time hipModuleLaunchCooperativeKernel takes
                         before the launch reaches the fake GPU */
} LoomFakeHipConfig;

typedef struct LoomFakeHipStats {
  int launches;
  unsigned last_grid;
  unsigned last_block;
  unsigned last_smem;
  unsigned long long last_epoch;
  unsigned long long last_timeout_cycles;
  unsigned last_host_flags;
  int gated_launches; /* launches that started behind a stream wait */
  long live_device_allocs;
  long live_host_allocs;
  long live_modules;
  long live_streams;
  long live_events;
  long calls_without_device;
} LoomFakeHipStats;

typedef void (*LoomFakeHipConfigureFn)(const LoomFakeHipConfig *config);
typedef void (*LoomFakeHipStatsFn)(LoomFakeHipStats *stats);

} // extern "C"

#ifdef LOOM_HIP_FAKE_RUNTIME
//===----------------------------------------------------------------------===//
// The fake runtime and artifact
//===----------------------------------------------------------------------===//
#include "runtime/hip/HipRuntime.h"
#include "tests/unit/FakeStreamGate.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

using loom::rt::hip::HipDeviceProp;
using Clock = std::chrono::steady_clock;

constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2,
              kNoDevice = 100, kInvalidDevice = 101, kInvalidImage = 200,
              kInvalidHandle = 400, kNotFound = 500, kNotReady = 600,
              kIllegalAddress = 700, kCooperativeTooLarge = 720,
              kNotSupported = 801, kUnknown = 999;

struct Launch {
  std::atomic<int> remaining{0};
  std::atomic<bool> faulted{false};
  std::mutex mu;
  Clock::time_point end; // written by the last worker out
};

struct Stream {
  std::shared_ptr<Launch> current;
  std::shared_ptr<loom::fake::StreamGate> gate; // waiting for the next launch
};

struct Event {
  bool recorded = false;
  std::shared_ptr<Launch> after; // completes when this launch ends
  std::shared_ptr<loom::fake::StreamGate> gate; // or when this gate opens
  Clock::time_point at;
};

struct Module {
  const LoomFakeHipCodeObject *code;
};

struct State {
  std::mutex mu;
  LoomFakeHipConfig config{
      0, 1, 4, "gfx950:sramecc+:xnack-", 2, 1, 1, 160 * 1024, 0, 0, 0, 1, 0};
  LoomFakeHipStats stats{};
  std::map<uintptr_t, size_t> device; // allocations
  std::map<uintptr_t, size_t> host;   // pinned allocations
  std::atomic<bool> sticky{false};    // a kernel faulted
  std::atomic<int> running{0};        // launches not finished
};

State &state() {
  static State *s = new State; // outlives detached kernel threads
  return *s;
}

thread_local int tlsDevice = -1;

/// Every call that works on a device needs one selected on the calling
/// thread: the backend must hipSetDevice on each entry thread (real HIP
/// would silently use device 0).
bool noDevice() {
  if (tlsDevice >= 0)
    return false;
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.calls_without_device;
  return true;
}

bool inside(const std::map<uintptr_t, size_t> &allocations, uintptr_t p,
            size_t bytes) {
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin())
    return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

bool isDevice(const void *ptr, size_t bytes) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(state().mu);
  return inside(state().device, p, bytes) || inside(state().host, p, bytes);
}

template <typename T> T loadAcquire(const T *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
template <typename T> void storeRelaxed(T *p, T v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

bool startsWith(const char *name, const char *prefix) {
  return name && std::strncmp(name, prefix, std::strlen(prefix)) == 0;
}

void finishWorker(Launch &launch) {
  std::lock_guard<std::mutex> lock(launch.mu);
  if (launch.remaining.fetch_sub(1) == 1) {
    launch.end = Clock::now();
    --state().running;
  }
}

/// One worker block: the device interpreter loop, as DeviceAbi.h and
/// kernels/nvidia/Interpreter.cuh say: a wait that is not satisfied at once
/// is published; a worker leaving a wait records -1 (abort flag) or -2 (its
/// own timeout, which also raises the flag); a failed body records its code
/// with event -1 and raises the flag; dynamic mode takes tickets from
/// events[num_events], launch e's starting at (e - 1) * (tasks + workers).
void runWorker(std::shared_ptr<Launch> launch, LoomKernelArgs args,
               const LoomProgramDesc *p, int32_t w) {
  LoomWorkerStatus *me = &args.status[w];
  if (!args.bindings || !args.events || !args.status || !args.abort_flag ||
      (p->workspace_bytes > 0 && !args.workspace)) {
    launch->faulted = true; // what a real kernel would fault on
    finishWorker(*launch);
    return;
  }
  auto *abortFlag = const_cast<int32_t *>(args.abort_flag);
  auto raiseAbort = [&] { __atomic_store_n(abortFlag, 1, __ATOMIC_RELAXED); };
  auto stopped = [&] {
    return __atomic_load_n(abortFlag, __ATOMIC_RELAXED) != 0 ||
           launch->faulted.load();
  };
  auto body = [&](int32_t task) -> bool {
    const char *name = p->task_names[task];
    if (startsWith(name, "fail")) {
      storeRelaxed(&me->error, int32_t{42});
      raiseAbort();
      return false;
    }
    if (startsWith(name, "crash")) {
      launch->faulted = true;
      return false;
    }
    if (startsWith(name, "stuck"))
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    if (startsWith(name, "step")) {
      auto *x = static_cast<int64_t *>(args.bindings[0].data);
      x[task] =
          (task == 0 ? 100 * static_cast<int64_t>(args.epoch) : x[task - 1]) +
          1;
    }
    return true;
  };
  /// False when the worker must leave (its record says why).
  auto wait = [&](int32_t task, int32_t e) -> bool {
    unsigned long long needed =
        args.epoch * static_cast<unsigned long long>(p->event_needs[e]);
    unsigned long long seen = loadAcquire(&args.events[e]);
    if (seen >= needed)
      return true;
    storeRelaxed(&me->task, task);
    storeRelaxed(&me->event, e);
    storeRelaxed(&me->needed, static_cast<uint64_t>(needed));
    storeRelaxed(&me->seen, static_cast<uint64_t>(seen));
    Clock::time_point began = Clock::now();
    while ((seen = loadAcquire(&args.events[e])) < needed) {
      storeRelaxed(&me->seen, static_cast<uint64_t>(seen));
      if (stopped()) {
        storeRelaxed(&me->error, int32_t{-1});
        return false;
      }
      // clock64 at 1 GHz: cycles are nanoseconds.
      if (args.timeout_cycles != 0 &&
          static_cast<unsigned long long>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(
                  Clock::now() - began)
                  .count()) > args.timeout_cycles) {
        storeRelaxed(&me->error, int32_t{-2});
        raiseAbort();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    storeRelaxed(&me->seen, static_cast<uint64_t>(seen));
    return true;
  };
  auto runTask = [&](int32_t task) -> bool {
    for (int32_t k = p->task_wait_begin[task]; k < p->task_wait_begin[task + 1];
         ++k)
      if (!wait(task, p->wait_events[k]))
        return false;
    if (stopped())
      return false;
    storeRelaxed(&me->task, task);
    storeRelaxed(&me->event, int32_t{-1});
    if (!body(task))
      return false;
    for (int32_t k = p->task_trigger_begin[task];
         k < p->task_trigger_begin[task + 1]; ++k)
      __atomic_fetch_add(&args.events[p->trigger_events[k]], 1ull,
                         __ATOMIC_RELEASE);
    return true;
  };
  auto run = [&]() -> bool {
    if (p->mode == LOOM_SCHEDULE_DYNAMIC) {
      unsigned long long *queue = args.events + p->num_events;
      const unsigned long long base =
          (args.epoch - 1) *
          static_cast<unsigned long long>(p->num_tasks + p->num_workers);
      for (;;) {
        unsigned long long ticket =
            __atomic_fetch_add(queue, 1ull, __ATOMIC_RELAXED) - base;
        if (ticket >= static_cast<unsigned long long>(p->num_tasks))
          return true;
        if (!runTask(p->worker_tasks[ticket]))
          return false;
      }
    }
    for (int32_t i = p->worker_begin[w]; i < p->worker_begin[w + 1]; ++i)
      if (!runTask(p->worker_tasks[i]))
        return false;
    return true;
  };
  if (run()) {
    storeRelaxed(&me->task, int32_t{-1});
    storeRelaxed(&me->event, int32_t{-1});
  }
  finishWorker(*launch);
}

int streamState(Stream *s) {
  // A gate no launch took still holds the stream until it opens.
  if (s->gate && !s->gate->satisfied())
    return kNotReady;
  // A stream without kernels (the runtime's memory stream) sharing the
  // kernel's hardware queue: its copies are done (the fake copies at once)
  // but do not say so before the kernel ends.
  if (!s->current)
    return state().config.shared_queue && state().running.load() > 0 ? kNotReady
                                                                     : kSuccess;
  if (s->current->remaining.load() > 0)
    return kNotReady;
  if (s->current->faulted.load()) {
    state().sticky = true;
    return kIllegalAddress;
  }
  return kSuccess;
}

//--- The artifact ----------------------------------------------------------//

/// A task table in vectors; static storage keeps every pointer valid while
/// the library is loaded.
struct Table {
  int32_t numWorkers = 1;
  std::vector<std::vector<int32_t>> lists, waits, triggers;
  std::vector<int32_t> needs;
  std::vector<std::string> names;

  void add(const std::string &name, int32_t worker, std::vector<int32_t> on,
           std::vector<int32_t> trigger) {
    lists.resize(numWorkers);
    lists[worker].push_back(static_cast<int32_t>(waits.size()));
    waits.push_back(std::move(on));
    triggers.push_back(std::move(trigger));
    names.push_back(name);
  }
};

struct Built {
  LoomBufferDesc buffer{};
  std::vector<int32_t> workerBegin, workerTasks, waitBegin, waitEvents,
      triggerBegin, triggerEvents, needs;
  std::vector<std::string> names;
  std::vector<const char *> namePtrs;
  LoomProgramDesc desc{};
  LoomFakeHipCodeObject code{};
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

LoomDeviceProgram *build(const char *name, Table t) {
  auto *b = new Built; // one per request; a test loads a handful
  b->buffer = {"x", LOOM_ROLE_OUTPUT, LOOM_ELEM_I64, 1, {7}, 0};
  t.lists.resize(t.numWorkers);
  flatten(t.lists, b->workerBegin, b->workerTasks);
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
  d.mode = LOOM_SCHEDULE_STATIC;
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
  std::memcpy(b->code.magic, LOOM_FAKE_HIP_MAGIC, sizeof(LOOM_FAKE_HIP_MAGIC));
  b->code.kernel_name = LOOM_FAKE_HIP_KERNEL;
  b->code.program = &b->desc;
  LoomDeviceProgram &p = b->device;
  p.abi_version = LOOM_DEVICE_ABI_VERSION;
  p.program = &b->desc;
  p.arch = "gfx950";
  p.code_object = &b->code;
  p.code_object_size = sizeof(b->code);
  p.kernel_name = LOOM_FAKE_HIP_KERNEL;
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

} // namespace

//--- Test controls ---------------------------------------------------------//

FAKE_API void loom_fake_hip_configure(const LoomFakeHipConfig *config) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().config = *config;
  state().stats.launches = 0;
  state().stats.gated_launches = 0;
  state().stats.calls_without_device = 0;
  state().sticky = false;
}

FAKE_API void loom_fake_hip_stats(LoomFakeHipStats *stats) {
  std::lock_guard<std::mutex> lock(state().mu);
  *stats = state().stats;
}

/// The artifact: see the variants below.
FAKE_API const LoomDeviceProgram *loom_device_program(void) {
  const char *env = std::getenv(LOOM_FAKE_HIP_ARTIFACT_ENV);
  std::string v = env ? env : "chain";
  if (v == "null")
    return nullptr;
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

  LoomDeviceProgram *p = build("chain", chain());
  auto *desc = const_cast<LoomProgramDesc *>(p->program);
  if (v == "gfx942")
    p->arch = "gfx942";
  else if (v == "xnack")
    p->arch = "gfx950:xnack+";
  else if (v == "xnackoff")
    p->arch = "gfx950:xnack-";
  else if (v == "generic")
    p->arch = "gfx9-4-generic";
  else if (v == "cuda")
    p->arch = "sm_90a";
  else if (v == "bigsmem")
    p->dynamic_smem_bytes = 200 * 1024;
  else if (v == "nokernel")
    p->kernel_name = "loom_missing_kernel";
  else if (v == "badimage") {
    static const char kJunk[32] = "not a code object";
    p->code_object = kJunk;
    p->code_object_size = sizeof(kJunk);
  } else if (v == "dynamic") {
    // One queue in dependency order (the static lists are not).
    desc->mode = LOOM_SCHEDULE_DYNAMIC;
    auto *queue = const_cast<int32_t *>(desc->worker_tasks);
    for (int32_t t = 0; t < desc->num_tasks; ++t)
      queue[t] = t;
  } else if (v == "badabi")
    p->abi_version = LOOM_DEVICE_ABI_VERSION + 1;
  else if (v == "inline")
    p->flags = LOOM_DEVICE_INLINE_BINDINGS;
  return p;
}

//--- Errors, init, devices -------------------------------------------------//

FAKE_API const char *hipGetErrorName(int r) {
  switch (r) {
  case kSuccess:
    return "hipSuccess";
  case kInvalidValue:
    return "hipErrorInvalidValue";
  case kOutOfMemory:
    return "hipErrorOutOfMemory";
  case kNoDevice:
    return "hipErrorNoDevice";
  case kInvalidDevice:
    return "hipErrorInvalidDevice";
  case kInvalidImage:
    return "hipErrorInvalidImage";
  case kInvalidHandle:
    return "hipErrorInvalidHandle";
  case kNotFound:
    return "hipErrorNotFound";
  case kNotReady:
    return "hipErrorNotReady";
  case kIllegalAddress:
    return "hipErrorIllegalAddress";
  case kCooperativeTooLarge:
    return "hipErrorCooperativeLaunchTooLarge";
  case kNotSupported:
    return "hipErrorNotSupported";
  case kUnknown:
    return "hipErrorUnknown";
  }
  return "hipErrorUnknown";
}

FAKE_API const char *hipGetErrorString(int r) {
  switch (r) {
  case kIllegalAddress:
    return "an illegal memory access was encountered";
  case kNoDevice:
    return "no ROCm-capable device is detected";
  case kInvalidImage:
    return "device kernel image is invalid";
  case kNotFound:
    return "named symbol not found";
  case kUnknown:
    return "unknown error";
  }
  return "fake runtime error";
}

FAKE_API int hipInit(unsigned) { return state().config.init_result; }

FAKE_API int hipRuntimeGetVersion(int *version) {
  *version = 70000000;
  return kSuccess;
}

FAKE_API int hipGetDeviceCount(int *count) {
  *count = state().config.devices;
  return kSuccess;
}

FAKE_API int hipSetDevice(int device) {
  if (device < 0 || device >= state().config.devices)
    return kInvalidDevice;
  tlsDevice = device;
  return kSuccess;
}

FAKE_API int hipDeviceGetAttribute(int *value, int attribute, int device) {
  if (device < 0 || device >= state().config.devices)
    return kInvalidDevice;
  const LoomFakeHipConfig &c = state().config;
  switch (attribute) {
  case 3:
    *value = c.can_map_host;
    return kSuccess;
  case 5:
    *value = 2400000;
    return kSuccess; // shader clock, kHz
  case 10:
    *value = c.cooperative;
    return kSuccess;
  case 56:
    *value = 1024;
    return kSuccess; // max threads per block
  case 63:
    *value = c.cu_count;
    return kSuccess;
  case 74:
    *value = 64 * 1024;
    return kSuccess;
  case 75:
    *value = c.max_shared;
    return kSuccess; // LDS opt-in limit
  case 85:
    *value = 1;
    return kSuccess; // unified addressing
  case 10000:        // clock64: 1 GHz, unless told to say otherwise
    *value = c.clock_khz ? c.clock_khz : 1000000;
    return kSuccess;
  }
  return kInvalidValue;
}

#ifndef LOOM_HIP_FAKE_OLD
FAKE_API int hipGetDevicePropertiesR0600(HipDeviceProp *props, int device) {
  if (device < 0 || device >= state().config.devices)
    return kInvalidDevice;
  const LoomFakeHipConfig &c = state().config;
  std::memset(props, 0, sizeof(*props));
  std::snprintf(props->name, sizeof(props->name), "Fake AMD Instinct %d",
                device);
  std::snprintf(props->gcnArchName, sizeof(props->gcnArchName), "%s", c.arch);
  props->multiProcessorCount = c.cu_count + (c.props_broken ? 1 : 0);
  return kSuccess;
}
#endif

//--- Memory ----------------------------------------------------------------//

FAKE_API int hipMalloc(void **out, size_t bytes) {
  if (noDevice())
    return kInvalidDevice;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return kOutOfMemory;
  std::lock_guard<std::mutex> lock(state().mu);
  *out = p;
  state().device[reinterpret_cast<uintptr_t>(p)] = bytes;
  ++state().stats.live_device_allocs;
  return kSuccess;
}

FAKE_API int hipFree(void *p) {
  if (noDevice())
    return kInvalidDevice;
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().device.erase(reinterpret_cast<uintptr_t>(p)))
    return kInvalidValue;
  --state().stats.live_device_allocs;
  std::free(p);
  return kSuccess;
}

FAKE_API int hipHostMalloc(void **out, size_t bytes, unsigned flags) {
  if (noDevice())
    return kInvalidDevice;
  void *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  std::lock_guard<std::mutex> lock(state().mu);
  *out = p;
  state().host[reinterpret_cast<uintptr_t>(p)] = bytes;
  ++state().stats.live_host_allocs;
  state().stats.last_host_flags = flags;
  return kSuccess;
}

// Only the older name: the runtime must fall back to it.
FAKE_API int hipFreeHost(void *p) {
  if (noDevice())
    return kInvalidDevice;
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().host.erase(reinterpret_cast<uintptr_t>(p)))
    return kInvalidValue;
  --state().stats.live_host_allocs;
  std::free(p);
  return kSuccess;
}

FAKE_API int hipHostGetDevicePointer(void **out, void *p, unsigned) {
  if (noDevice())
    return kInvalidDevice;
  if (!isDevice(p, 1))
    return kInvalidValue;
  *out = p;
  return kSuccess;
}

FAKE_API int hipPointerGetAttributes(loom::rt::hip::HipPointerAttributes *out,
                                     const void *p) {
  std::memset(out, 0, sizeof(*out));
  // ROCm 6: unregistered host memory is a success with type 0.
  out->type = isDevice(p, 1) ? 2 : 0;
  return kSuccess;
}

FAKE_API int hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind,
                            Stream *) {
  if (noDevice())
    return kInvalidDevice;
  const bool srcDevice = kind == 2 || kind == 3,
             dstDevice = kind == 1 || kind == 3;
  if ((srcDevice && !isDevice(src, bytes)) ||
      (dstDevice && !isDevice(dst, bytes)) || kind < 0 || kind > 4)
    return kInvalidValue;
  // The runtime reads counters while a "kernel" may be adding to them: copy
  // aligned words atomically, as the real copy engine reads whole words.
  if (reinterpret_cast<uintptr_t>(dst) % 8 == 0 &&
      reinterpret_cast<uintptr_t>(src) % 8 == 0 && bytes % 8 == 0) {
    auto *to = static_cast<uint64_t *>(dst);
    auto *from = static_cast<const uint64_t *>(src);
    for (size_t i = 0; i < bytes / 8; ++i)
      __atomic_store_n(&to[i], __atomic_load_n(&from[i], __ATOMIC_RELAXED),
                       __ATOMIC_RELAXED);
    return kSuccess;
  }
  std::memmove(dst, src, bytes);
  return kSuccess;
}

FAKE_API int hipMemsetAsync(void *dst, int value, size_t bytes, Stream *) {
  if (noDevice())
    return kInvalidDevice;
  if (!isDevice(dst, bytes))
    return kInvalidValue;
  std::memset(dst, value, bytes);
  return kSuccess;
}

//--- Modules and functions -------------------------------------------------//

FAKE_API int hipModuleLoadData(Module **out, const void *image) {
  if (noDevice())
    return kInvalidDevice;
  auto *code = static_cast<const LoomFakeHipCodeObject *>(image);
  if (std::memcmp(code->magic, LOOM_FAKE_HIP_MAGIC,
                  sizeof(LOOM_FAKE_HIP_MAGIC)) != 0)
    return kInvalidImage;
  *out = new Module{code};
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.live_modules;
  return kSuccess;
}

FAKE_API int hipModuleUnload(Module *module) {
  if (noDevice())
    return kInvalidDevice;
  delete module;
  std::lock_guard<std::mutex> lock(state().mu);
  --state().stats.live_modules;
  return kSuccess;
}

FAKE_API int hipModuleGetFunction(Module **out, Module *module,
                                  const char *name) {
  if (noDevice())
    return kInvalidDevice;
  if (std::strcmp(name, module->code->kernel_name) != 0)
    return kNotFound;
  *out = module; // a module has one kernel: the function is the module
  return kSuccess;
}

FAKE_API int hipFuncGetAttribute(int *value, int attribute, Module *) {
  if (noDevice())
    return kInvalidDevice;
  if (attribute != 4)
    return kInvalidValue;
  *value = 64; // registers per thread
  return kSuccess;
}

FAKE_API int hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks,
                                                                Module *,
                                                                int threads,
                                                                size_t smem) {
  if (noDevice())
    return kInvalidDevice;
  *blocks =
      threads > 1024 || smem > static_cast<size_t>(state().config.max_shared)
          ? 0
          : state().config.blocks_per_cu;
  return kSuccess;
}

FAKE_API int hipModuleLaunchCooperativeKernel(Module *f, unsigned gx,
                                              unsigned gy, unsigned gz,
                                              unsigned bx, unsigned by,
                                              unsigned bz, unsigned smem,
                                              Stream *stream, void **params) {
  if (noDevice())
    return kInvalidDevice;
  const LoomFakeHipConfig &c = state().config;
  if (state().sticky)
    return kIllegalAddress;
  if (!c.cooperative)
    return kNotSupported;
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || bx > 1024 ||
      smem > static_cast<unsigned>(c.max_shared))
    return kInvalidValue;
  if (gx > static_cast<unsigned>(c.cu_count * c.blocks_per_cu))
    return kCooperativeTooLarge;
  if (stream->current && stream->current->remaining.load() > 0)
    return kInvalidValue; // the backend never overlaps its own launches
  LoomKernelArgs args = *static_cast<LoomKernelArgs *>(params[0]);
  const LoomProgramDesc *program = f->code->program;
  if (static_cast<int32_t>(gx) != program->num_workers)
    return kInvalidValue;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    LoomFakeHipStats &s = state().stats;
    ++s.launches;
    s.last_grid = gx;
    s.last_block = bx;
    s.last_smem = smem;
    s.last_epoch = args.epoch;
    s.last_timeout_cycles = args.timeout_cycles;
  }
  // The host's part of the call, before the GPU has the launch.
  if (c.launch_call_us > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(c.launch_call_us));
  auto launch = std::make_shared<Launch>();
  launch->remaining = static_cast<int>(gx);
  ++state().running;
  stream->current = launch;
  loom::fake::startBehind(std::move(stream->gate), [=](bool gated) {
    if (gated) {
      std::lock_guard<std::mutex> lock(state().mu);
      ++state().stats.gated_launches;
    }
    for (unsigned w = 0; w < gx; ++w)
      std::thread(runWorker, launch, args, program, static_cast<int32_t>(w))
          .detach();
  });
  return kSuccess;
}

//--- Streams and events ----------------------------------------------------//

FAKE_API int hipStreamCreateWithFlags(Stream **out, unsigned) {
  if (noDevice())
    return kInvalidDevice;
  *out = new Stream;
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.live_streams;
  return kSuccess;
}

FAKE_API int hipStreamDestroy(Stream *stream) {
  if (noDevice())
    return kInvalidDevice;
  delete stream;
  std::lock_guard<std::mutex> lock(state().mu);
  --state().stats.live_streams;
  return kSuccess;
}

FAKE_API int hipStreamQuery(Stream *stream) {
  if (noDevice())
    return kInvalidDevice;
  return streamState(stream);
}

FAKE_API int hipStreamSynchronize(Stream *stream) {
  if (noDevice())
    return kInvalidDevice;
  int r;
  while ((r = streamState(stream)) == kNotReady)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  return r;
}

FAKE_API int hipEventCreateWithFlags(Event **out, unsigned) {
  if (noDevice())
    return kInvalidDevice;
  *out = new Event;
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.live_events;
  return kSuccess;
}

FAKE_API int hipEventDestroy(Event *event) {
  if (noDevice())
    return kInvalidDevice;
  delete event;
  std::lock_guard<std::mutex> lock(state().mu);
  --state().stats.live_events;
  return kSuccess;
}

FAKE_API int hipStreamWaitValue32(Stream *stream, void *ptr, uint32_t value,
                                  unsigned flags, uint32_t mask) {
  if (noDevice())
    return kInvalidDevice;
  if (!state().config.stream_mem_ops)
    return kNotSupported;
  if (flags != 0 || mask != ~0u || reinterpret_cast<uintptr_t>(ptr) % 4 != 0 ||
      !isDevice(ptr, 4))
    return kInvalidValue;
  // A wait already satisfied is nothing to wait for.
  if (auto gate = loom::fake::makeStreamGate(static_cast<const uint32_t *>(ptr),
                                             value, /*wraps=*/false))
    stream->gate = gate;
  return kSuccess;
}

FAKE_API int hipEventRecord(Event *event, Stream *stream) {
  if (noDevice())
    return kInvalidDevice;
  event->recorded = true;
  event->after = nullptr;
  event->gate = nullptr;
  event->at = Clock::now();
  if (stream->gate) {
    event->gate = stream->gate;
    return kSuccess;
  }
  if (stream->current && stream->current->remaining.load() > 0)
    event->after = stream->current;
  return kSuccess;
}

FAKE_API int hipEventElapsedTime(float *ms, Event *start, Event *end) {
  if (noDevice())
    return kInvalidDevice;
  if (!start->recorded || !end->recorded)
    return kInvalidHandle;
  Clock::time_point t[2];
  Event *events[2] = {start, end};
  for (int i = 0; i < 2; ++i) {
    if (events[i]->gate) {
      if (!events[i]->gate->open.load())
        return kNotReady;
      t[i] = events[i]->gate->opened;
      continue;
    }
    if (!events[i]->after) {
      t[i] = events[i]->at;
      continue;
    }
    Launch &l = *events[i]->after;
    std::lock_guard<std::mutex> lock(l.mu);
    if (l.remaining.load() > 0)
      return kNotReady;
    t[i] = l.end;
  }
  *ms = std::chrono::duration<float, std::milli>(t[1] - t[0]).count();
  return kSuccess;
}

#else // !LOOM_HIP_FAKE_RUNTIME
//===----------------------------------------------------------------------===//
// The tests
//===----------------------------------------------------------------------===//
#include "loom/loomrt.h"
#include "runtime/hip/HipChecks.h"
#include "runtime/hip/HipRuntime.h"
#include "runtime/src/DeviceProgram.h"
#include "runtime/src/DeviceWatchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace loom::rt;
using namespace loom::rt::hip;

#define EXPECT_ERROR(call, expected, message)                                  \
  do {                                                                         \
    loomrt_status status_ = (call);                                            \
    EXPECT_EQ(status_, expected)                                               \
        << loomrt_status_name(status_) << ": " << loomrt_last_error();         \
    EXPECT_EQ(std::string(loomrt_last_error()), std::string(message));         \
  } while (false)

/// Sets (or, with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

//===----------------------------------------------------------------------===//
// No HIP runtime on this machine
//===----------------------------------------------------------------------===//

/// "hip: cannot load libamdhip64 (<path>: <dlerror>; ...)" for the
/// candidates in the documented order.
std::string noRuntimeMessage() {
  std::string tried;
  for (const char *path : {"libamdhip64.so", "libamdhip64.so.7",
                           "libamdhip64.so.6", "/opt/rocm/lib/libamdhip64.so"})
    tried += (tried.empty() ? "" : "; ") + std::string(path) +
             ": cannot open shared object file: No such file or directory";
  return "hip: cannot load libamdhip64 (" + tried + ")";
}

/// True when a real HIP runtime loads here (then the no-runtime tests have
/// nothing to check).
bool hipRuntimeInstalled() {
  for (const std::string &path : hipRuntimeCandidates())
    if (void *handle = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      ::dlclose(handle);
      return true;
    }
  return false;
}

TEST(HipNoRuntime, CountIsZeroAndSaysWhy) {
  ScopedEnv env(kHipRuntimeEnv, nullptr);
  if (hipRuntimeInstalled())
    GTEST_SKIP() << "a HIP runtime (libamdhip64) is installed here";
  EXPECT_EQ(hipRuntimeCandidates(),
            (std::vector<std::string>{"libamdhip64.so", "libamdhip64.so.7",
                                      "libamdhip64.so.6",
                                      "/opt/rocm/lib/libamdhip64.so"}));
  int count = 7;
  EXPECT_ERROR(loomrt_device_count("hip", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE, noRuntimeMessage());
  EXPECT_EQ(count, 0);
  // Not cached: asking again tries again, and says the same.
  EXPECT_ERROR(loomrt_device_count("hip", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE, noRuntimeMessage());
}

TEST(HipNoRuntime, NoDeviceAndNoProgram) {
  ScopedEnv env(kHipRuntimeEnv, nullptr);
  if (hipRuntimeInstalled())
    GTEST_SKIP() << "a HIP runtime (libamdhip64) is installed here";
  loomrt_device *device = reinterpret_cast<loomrt_device *>(0x1);
  EXPECT_ERROR(loomrt_device_create("hip", 0, &device),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE, noRuntimeMessage());
  EXPECT_EQ(device, nullptr);
  // Without a device nothing loads, and says so instead of crashing.
  loomrt_program *program = nullptr;
  EXPECT_EQ(loomrt_program_load(device, "x.so", 0, &program),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(program, nullptr);
}

TEST(HipNoRuntime, OverrideNamesTheLibrary) {
  ScopedEnv env(kHipRuntimeEnv, "/nonexistent/libamdhip64.so");
  int count = 7;
  EXPECT_ERROR(loomrt_device_count("hip", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               "hip: cannot load /nonexistent/libamdhip64.so (from "
               "LOOM_HIP_RUNTIME) (/nonexistent/libamdhip64.so: cannot open "
               "shared object file: No such file or directory)");
  EXPECT_EQ(count, 0);
}

//===----------------------------------------------------------------------===//
// Pure helpers, with made-up devices
//===----------------------------------------------------------------------===//

HipDeviceInfo fakeInfo(const char *arch = "gfx950:sramecc+:xnack-") {
  HipDeviceInfo info;
  info.ordinal = 0;
  info.name = "AMD Instinct MI355X";
  info.gcnArchName = arch;
  info.cuCount = 256;
  info.cooperativeLaunch = true;
  info.unifiedAddressing = true;
  info.canMapHostMemory = true;
  info.maxThreadsPerBlock = 1024;
  info.maxSharedPerBlock = 160 * 1024;
  info.clockKHz = 2400000;
  info.clockInstructionKHz = 100000;
  return info;
}

const char *const kMi355 =
    "hip device 0 (AMD Instinct MI355X, gfx950:sramecc+:xnack-, 256 CUs)";

TEST(HipChecks, DescribeDevice) {
  EXPECT_EQ(describeDevice(fakeInfo()), kMi355);
}

TEST(HipChecks, ParseGfxTarget) {
  GfxTarget t;
  ASSERT_TRUE(parseGfxTarget("gfx950", &t));
  EXPECT_EQ(t.processor, "gfx950");
  EXPECT_TRUE(t.features.empty());
  EXPECT_FALSE(t.generic());
  ASSERT_TRUE(parseGfxTarget("gfx942:sramecc+:xnack-", &t));
  EXPECT_EQ(t.processor, "gfx942");
  ASSERT_EQ(t.features.size(), 2u);
  EXPECT_EQ(t.features[0], (std::pair<std::string, bool>{"sramecc", true}));
  EXPECT_EQ(t.features[1], (std::pair<std::string, bool>{"xnack", false}));
  ASSERT_TRUE(parseGfxTarget("gfx90a:xnack+", &t));
  EXPECT_EQ(t.processor, "gfx90a");
  ASSERT_TRUE(parseGfxTarget("gfx1201", &t));
  ASSERT_TRUE(parseGfxTarget("gfx9-4-generic", &t));
  EXPECT_TRUE(t.generic());
  for (const char *bad :
       {"", "sm_90a", "gfx", "gfx:xnack+", "gfx950:xnack", "gfx950:", "gfx950 ",
        "GFX950", "gfx950:xnack+x", "gfx-950"})
    EXPECT_FALSE(parseGfxTarget(bad, &t)) << bad;
  EXPECT_FALSE(parseGfxTarget(nullptr, &t));
}

TEST(HipChecks, ArchIgnoresFeatureSuffixes) {
  const HipDeviceInfo info = fakeInfo();
  EXPECT_TRUE(checkArch("a.so", "gfx950", info).ok());
  // A feature the artifact states must agree with the device's.
  EXPECT_TRUE(checkArch("a.so", "gfx950:xnack-", info).ok());
  EXPECT_TRUE(checkArch("a.so", "gfx950:sramecc+:xnack-", info).ok());
  // A device that states no features runs any of them (the loader decides).
  EXPECT_TRUE(checkArch("a.so", "gfx950:xnack+", fakeInfo("gfx950")).ok());
  EXPECT_TRUE(checkArch("a.so", "gfx950", fakeInfo("gfx950")).ok());
  // Generic targets are left to hipModuleLoadData.
  EXPECT_TRUE(checkArch("a.so", "gfx9-4-generic", info).ok());
}

TEST(HipChecks, ArchRefusals) {
  const HipDeviceInfo info = fakeInfo();
  Status s = checkArch("a.so", "gfx942", info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_LOAD_FAILED);
  EXPECT_EQ(s.message(), std::string("cannot run 'a.so' on ") + kMi355 +
                             ": it is built for gfx942 and the device is "
                             "gfx950 (rebuild the artifact for gfx950)");
  s = checkArch("a.so", "gfx95", info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_LOAD_FAILED);
  s = checkArch("a.so", "gfx950:xnack+", info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_LOAD_FAILED);
  EXPECT_EQ(s.message(),
            std::string("cannot run 'a.so' on ") + kMi355 +
                ": it is built for gfx950:xnack+, which needs xnack+, but the "
                "device runs with xnack- (rebuild the artifact for gfx950 "
                "without target features, or for gfx950:xnack-)");
  s = checkArch("a.so", "sm_90a", info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_LOAD_FAILED);
  EXPECT_EQ(s.message(), std::string("cannot run 'a.so' on ") + kMi355 +
                             ": it is built for 'sm_90a', not an AMD GPU "
                             "architecture (gfxNNN, optionally with target "
                             "features: gfx942:xnack-)");
  s = checkArch("a.so", "gfx950", fakeInfo(""));
  EXPECT_EQ(s.code(), LOOMRT_ERROR_LOAD_FAILED);
  EXPECT_TRUE(contains(s.message(), "the device reports the architecture ''"))
      << s.message();
}

TEST(HipChecks, BlockShape) {
  const HipDeviceInfo info = fakeInfo();
  EXPECT_TRUE(checkBlockShape("p", {8, 256, 160 * 1024}, info).ok());
  Status s = checkBlockShape("p", {8, 2048, 0}, info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_RESOURCES);
  EXPECT_EQ(s.message(),
            std::string("program 'p' wants 2048 threads per worker block; ") +
                kMi355 + " allows 1 to 1024");
  s = checkBlockShape("p", {8, 256, 160 * 1024 + 1}, info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_RESOURCES);
  EXPECT_EQ(s.message(),
            std::string("program 'p' wants 163841 bytes of dynamic shared "
                        "memory (LDS) per worker block; ") +
                kMi355 + " allows at most 163840");
}

TEST(HipChecks, CoResidencyRefusalGivesBothNumbers) {
  const HipDeviceInfo info = fakeInfo();
  EXPECT_TRUE(checkCoResidency("p", {512, 256, 0}, 2, 64, info).ok());
  EXPECT_TRUE(checkCoResidency("p", {256, 256, 0}, 1, -1, info).ok());
  Status s = checkCoResidency("mla", {513, 256, 65536}, 2, 128, info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_RESOURCES);
  EXPECT_EQ(s.message(),
            std::string("program 'mla' needs 513 co-resident worker blocks "
                        "(256 threads and 65536 bytes of dynamic shared "
                        "memory each (128 registers per thread)), but ") +
                kMi355 +
                " holds only 2 per CU x 256 CUs = 512 at once; a persistent "
                "kernel with blocks waiting to start deadlocks, so it is not "
                "launched (schedule it for at most 512 workers, or use fewer "
                "threads or less shared memory)");
  // No block fits at all (too much LDS): refused even for one worker.
  s = checkCoResidency("p", {1, 1024, 0}, 0, -1, info);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_RESOURCES);
  EXPECT_TRUE(contains(s.message(), "holds only 0 per CU x 256 CUs = 0 at "
                                    "once"))
      << s.message();
  EXPECT_FALSE(contains(s.message(), "registers")) << s.message();
}

TEST(HipChecks, TimeoutCyclesUseTheClockInstructionRate) {
  HipDeviceInfo info = fakeInfo();
  // 2 x 10 s at 100 MHz.
  EXPECT_EQ(timeoutCycles(10000, info), 2000000000ull);
  info.clockInstructionKHz = 0; // unknown: the shader clock
  EXPECT_EQ(timeoutCycles(10000, info), 48000000000ull);
  info.clockKHz = 0; // nothing known: 4 GHz
  EXPECT_EQ(timeoutCycles(1, info), 8000000ull);
  EXPECT_EQ(deviceTimeoutCycles(0xFFFFFFFFu, 0x7FFFFFFF),
            2ull * 0xFFFFFFFFull * 0x7FFFFFFFull);
}

TEST(HipChecks, ArtifactChecksNameTheKind) {
  static const char code[4] = {1, 2, 3, 4};
  LoomProgramDesc program{};
  program.abi_version = LOOM_PROGRAM_ABI_VERSION;
  LoomDeviceProgram d{};
  d.abi_version = LOOM_DEVICE_ABI_VERSION;
  d.program = &program;
  d.arch = "gfx950";
  d.code_object = code;
  d.code_object_size = sizeof(code);
  d.kernel_name = "k";
  d.threads_per_block = 256;
  EXPECT_TRUE(DeviceArtifact::check("hip", "a.so", d).ok());
  d.abi_version = 99;
  Status s = DeviceArtifact::check("hip", "a.so", d);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_ABI_MISMATCH);
  EXPECT_EQ(s.message(), "hip program 'a.so' has device ABI version 99; this "
                         "runtime reads versions 3 to " +
                             std::to_string(LOOM_DEVICE_ABI_VERSION) +
                             " (rebuild it)");
  d.abi_version = LOOM_DEVICE_ABI_VERSION;
  d.code_object_size = 0;
  s = DeviceArtifact::check("hip", "a.so", d);
  EXPECT_EQ(s.code(), LOOMRT_ERROR_INVALID_PROGRAM);
  EXPECT_EQ(s.message(), "hip program 'a.so': it has no code object");
}

TEST(HipChecks, SharedReportsReadTheStatusProtocol) {
  // Two tasks on two workers: a waits for event 1, b for event 0.
  const char *names[] = {"a#0[0]", "b#1[0]"};
  const int32_t workerBegin[] = {0, 1, 2}, workerTasks[] = {0, 1},
                waitBegin[] = {0, 1, 2}, waits[] = {1, 0},
                triggerBegin[] = {0, 1, 2}, triggers[] = {0, 1},
                needs[] = {1, 1};
  LoomProgramDesc d{};
  d.abi_version = LOOM_PROGRAM_ABI_VERSION;
  d.name = "p";
  d.num_workers = 2;
  d.num_tasks = 2;
  d.num_events = 2;
  d.worker_begin = workerBegin;
  d.worker_tasks = workerTasks;
  d.task_wait_begin = waitBegin;
  d.wait_events = waits;
  d.task_trigger_begin = triggerBegin;
  d.trigger_events = triggers;
  d.event_needs = needs;
  d.task_names = names;
  d.run_task = [](int32_t, const LoomBinding *, void *) { return 0; };
  std::shared_ptr<const ProgramTable> table;
  ASSERT_TRUE(ProgramTable::create(d, "test", 0, &table).ok());
  std::vector<LoomWorkerStatus> status(2);
  status[0] = {0, 1, 0, 1, kWaitTimedOut, 0};
  status[1] = {1, 0, 0, 1, kWaitAborted, 0};
  EXPECT_EQ(describeWorkers(*table, status),
            "\n  worker 0: task 'a#0[0]' (id 0) waits for event 1: count 0, "
            "needs 1 (gave up: timeout_cycles)"
            "\n  worker 1: task 'b#1[0]' (id 1) waits for event 0: count 0, "
            "needs 1 (left: abort flag)");
  EXPECT_FALSE(anyTaskFailed(status));
  // A record whose wait the counters show over is stale.
  status[1] = {1, 0, 0, 1, 0, 0};
  std::vector<uint64_t> counts = {1, 0};
  EXPECT_TRUE(contains(describeWorkers(*table, status, &counts),
                       "worker 1: running task 'b#1[0]' (id 1) or a later "
                       "task that needed no wait (its wait for event 0 is "
                       "over: count 1, needs 1)"));
  // A body failure has event -1.
  status[0] = {0, -1, 0, 0, 42, 0};
  EXPECT_TRUE(anyTaskFailed(status));
  EXPECT_EQ(describeFailures(*table, status, 3),
            "program 'p' launch 3: task 'a#0[0]' (id 0) on worker 0 failed "
            "with code 42");
  // Silent records are a healthy launch: nobody left early.
  status.assign(2, LoomWorkerStatus{kWorkerNotStarted, -1, 0, 0, 0, 0});
  EXPECT_FALSE(anyWorkerLeft(status));
}

//===----------------------------------------------------------------------===//
// The whole backend against the fake runtime
//===----------------------------------------------------------------------===//

#if defined(LOOM_RT_FAKEHIP) && defined(LOOM_RT_FAKEHIP_OLD)

/// A test library: where the build put it, else beside this executable (the
/// tests may be copied to a GPU machine as a directory).
std::string testFile(const char *built) {
  if (::access(built, R_OK) == 0)
    return built;
  char self[4096] = {};
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : ".";
  dir = dir.substr(0, dir.rfind('/'));
  std::string name = built;
  return dir + "/" + name.substr(name.rfind('/') + 1);
}

const std::string &fakeRuntime() {
  static const std::string path = testFile(LOOM_RT_FAKEHIP);
  return path;
}
const std::string &fakeRuntimeOld() {
  static const std::string path = testFile(LOOM_RT_FAKEHIP_OLD);
  return path;
}

LoomFakeHipConfig defaultConfig() {
  LoomFakeHipConfig c{};
  c.init_result = 0;
  c.devices = 2;
  c.cu_count = 4;
  std::snprintf(c.arch, sizeof(c.arch), "%s", "gfx950:sramecc+:xnack-");
  c.blocks_per_cu = 2;
  c.cooperative = 1;
  c.can_map_host = 1;
  c.max_shared = 160 * 1024;
  c.props_broken = 0;
  c.shared_queue = 0;
  c.clock_khz = 0;
  c.stream_mem_ops = 1;
  c.launch_call_us = 0;
  return c;
}

const char *const kFakeDevice =
    "hip device 0 (Fake AMD Instinct 0, gfx950:sramecc+:xnack-, 4 CUs)";

class HipFake : public ::testing::Test {
protected:
  HipFake()
      : runtime_(kHipRuntimeEnv, fakeRuntime().c_str()),
        artifact_(LOOM_FAKE_HIP_ARTIFACT_ENV, nullptr) {}

  void SetUp() override {
    // The runtime loaded it first (RTLD_LOCAL); this gets the same copy.
    handle_ = ::dlopen(fakeRuntime().c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << ::dlerror();
    configureFn_ = reinterpret_cast<LoomFakeHipConfigureFn>(
        ::dlsym(handle_, "loom_fake_hip_configure"));
    statsFn_ = reinterpret_cast<LoomFakeHipStatsFn>(
        ::dlsym(handle_, "loom_fake_hip_stats"));
    ASSERT_TRUE(configureFn_ && statsFn_);
    configure(defaultConfig());
    base_ = rawStats();
  }
  void TearDown() override {
    if (program_) {
      EXPECT_EQ(loomrt_program_destroy(program_), LOOMRT_SUCCESS);
    }
    if (device_) {
      for (void *ptr : memory_)
        (void)loomrt_free(device_, ptr);
      EXPECT_EQ(loomrt_device_destroy(device_), LOOMRT_SUCCESS);
    }
    if (handle_)
      ::dlclose(handle_);
  }

  void configure(const LoomFakeHipConfig &c) { configureFn_(&c); }
  LoomFakeHipStats rawStats() {
    LoomFakeHipStats s{};
    statsFn_(&s);
    return s;
  }
  /// The fake's stats, live counts relative to the test's start (an earlier
  /// test in this process may have left a wedged kernel's memory behind).
  LoomFakeHipStats stats() {
    LoomFakeHipStats s = rawStats();
    s.live_device_allocs -= base_.live_device_allocs;
    s.live_host_allocs -= base_.live_host_allocs;
    s.live_modules -= base_.live_modules;
    s.live_streams -= base_.live_streams;
    s.live_events -= base_.live_events;
    return s;
  }
  void createDevice() {
    ASSERT_EQ(loomrt_device_create("hip", 0, &device_), LOOMRT_SUCCESS)
        << loomrt_last_error();
  }
  /// Loads artifact variant `variant` of the fake library.
  loomrt_status load(const char *variant) {
    ScopedEnv env(LOOM_FAKE_HIP_ARTIFACT_ENV, variant);
    return loomrt_program_load(device_, fakeRuntime().c_str(), 0, &program_);
  }
  void *alloc(size_t bytes) {
    void *ptr = nullptr;
    EXPECT_EQ(loomrt_malloc(device_, bytes, &ptr), LOOMRT_SUCCESS)
        << loomrt_last_error();
    memory_.push_back(ptr);
    return ptr;
  }
  /// Binds x (7 x i64) to fresh, poisoned device memory.
  void *bindX() {
    void *x = alloc(7 * sizeof(int64_t));
    EXPECT_EQ(loomrt_memset(device_, x, 0xFF, 7 * sizeof(int64_t)),
              LOOMRT_SUCCESS);
    EXPECT_EQ(loomrt_program_bind(program_, 0, x, nullptr, 0), LOOMRT_SUCCESS)
        << loomrt_last_error();
    return x;
  }
  std::vector<int64_t> readX(void *x) {
    std::vector<int64_t> out(7);
    EXPECT_EQ(loomrt_memcpy_kind(device_, out.data(), x, 7 * sizeof(int64_t),
                                 LOOMRT_COPY_DEVICE_TO_HOST),
              LOOMRT_SUCCESS)
        << loomrt_last_error();
    return out;
  }

  ScopedEnv runtime_, artifact_;
  void *handle_ = nullptr;
  LoomFakeHipConfigureFn configureFn_ = nullptr;
  LoomFakeHipStatsFn statsFn_ = nullptr;
  LoomFakeHipStats base_{};
  loomrt_device *device_ = nullptr;
  loomrt_program *program_ = nullptr;
  std::vector<void *> memory_;
};

TEST_F(HipFake, CountCreateDescribe) {
  int count = 0;
  EXPECT_EQ(loomrt_device_count("hip", &count), LOOMRT_SUCCESS);
  EXPECT_EQ(count, 2);
  createDevice();
  EXPECT_STREQ(loomrt_device_kind(device_), "hip");
  EXPECT_STREQ(loomrt_device_describe(device_), kFakeDevice);
  loomrt_device *other = nullptr;
  EXPECT_ERROR(loomrt_device_create("hip", 2, &other),
               LOOMRT_ERROR_UNKNOWN_DEVICE,
               "hip device ordinal 2 out of range: there are 2 (0 to 1)");
  ASSERT_EQ(loomrt_device_create("hip", 1, &other), LOOMRT_SUCCESS);
  EXPECT_STREQ(loomrt_device_describe(other),
               "hip device 1 (Fake AMD Instinct 1, gfx950:sramecc+:xnack-, 4 "
               "CUs)");
  EXPECT_EQ(loomrt_device_destroy(other), LOOMRT_SUCCESS);
}

TEST_F(HipFake, NoGpuIsZeroDevices) {
  LoomFakeHipConfig c = defaultConfig();
  c.init_result = 100; // hipErrorNoDevice
  configure(c);
  int count = 7;
  EXPECT_EQ(loomrt_device_count("hip", &count), LOOMRT_SUCCESS);
  EXPECT_EQ(count, 0);
  EXPECT_ERROR(loomrt_device_create("hip", 0, &device_),
               LOOMRT_ERROR_UNKNOWN_DEVICE,
               "hip device ordinal 0 out of range: the HIP runtime sees no "
               "devices");
}

TEST_F(HipFake, InitFailureSaysWhy) {
  LoomFakeHipConfig c = defaultConfig();
  c.init_result = 999;
  configure(c);
  int count = 7;
  EXPECT_ERROR(loomrt_device_count("hip", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               std::string("hip: hipInit failed (") + fakeRuntime() +
                   ", HIP runtime version 70000000): hipErrorUnknown "
                   "(unknown error)");
  EXPECT_EQ(count, 0);
}

TEST_F(HipFake, RuntimeWithoutR0600PropertiesIsRefused) {
  ScopedEnv old(kHipRuntimeEnv, fakeRuntimeOld().c_str());
  int count = 7;
  EXPECT_ERROR(loomrt_device_count("hip", &count),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               std::string("hip: ") + fakeRuntimeOld() +
                   " lacks the required symbol 'hipGetDevicePropertiesR0600'; "
                   "ROCm 6.0 or later is needed (or this is not libamdhip64)");
  EXPECT_EQ(count, 0);
}

TEST_F(HipFake, PropertiesLayoutIsCrossChecked) {
  LoomFakeHipConfig c = defaultConfig();
  c.props_broken = 1;
  configure(c);
  EXPECT_ERROR(loomrt_device_create("hip", 0, &device_),
               LOOMRT_ERROR_BACKEND_UNAVAILABLE,
               std::string("hip device 0: hipGetDevicePropertiesR0600 of ") +
                   fakeRuntime().c_str() +
                   ", HIP runtime version 70000000 does not have the "
                   "hipDeviceProp_tR0600 layout of ROCm 6/7 "
                   "(multiProcessorCount 5 where hipDeviceGetAttribute says "
                   "4; gcnArchName 'gfx950:sramecc+:xnack-')");
}

TEST_F(HipFake, MemoryFromAnyThread) {
  createDevice();
  void *a = alloc(1000);
  void *b = alloc(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  std::vector<unsigned char> host(1000, 0x11);
  EXPECT_EQ(loomrt_memcpy(device_, a, host.data(), 1000), LOOMRT_SUCCESS);
  // Another thread: the backend must select the device there too.
  std::thread([&] {
    EXPECT_EQ(loomrt_memset(device_, b, 0x5A, 500), LOOMRT_SUCCESS)
        << loomrt_last_error();
    EXPECT_EQ(loomrt_memcpy(device_, static_cast<char *>(b) + 500,
                            static_cast<char *>(a) + 500, 500),
              LOOMRT_SUCCESS)
        << loomrt_last_error();
  }).join();
  std::vector<unsigned char> back(1000);
  EXPECT_EQ(loomrt_memcpy_kind(device_, back.data(), b, 1000,
                               LOOMRT_COPY_DEVICE_TO_HOST),
            LOOMRT_SUCCESS);
  EXPECT_EQ(back[0], 0x5A);
  EXPECT_EQ(back[499], 0x5A);
  EXPECT_EQ(back[500], 0x11);
  // The direction given is checked by the runtime: a host pointer is not
  // device memory.
  EXPECT_EQ(loomrt_memcpy_kind(device_, host.data(), back.data(), 10,
                               LOOMRT_COPY_DEVICE_TO_HOST),
            LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(loomrt_last_error(),
                       std::string(kFakeDevice) + ": cannot copy 10 bytes"))
      << loomrt_last_error();
  EXPECT_TRUE(
      contains(loomrt_last_error(), "(device to host): hipErrorInvalidValue"))
      << loomrt_last_error();
  int local = 0;
  EXPECT_EQ(loomrt_free(device_, &local), LOOMRT_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(loomrt_last_error(),
                       "was not allocated by this device (or was freed)"));
  EXPECT_EQ(stats().calls_without_device, 0);
  EXPECT_EQ(stats().live_device_allocs, 2);
  EXPECT_EQ(loomrt_free(device_, a), LOOMRT_SUCCESS);
  memory_.erase(memory_.begin());
  EXPECT_EQ(stats().live_device_allocs, 1);
}

TEST_F(HipFake, LoadRefusalsAreClean) {
  createDevice();
  const std::string path = fakeRuntime();
  EXPECT_ERROR(load("gfx942"), LOOMRT_ERROR_LOAD_FAILED,
               "cannot run '" + path + "' on " + kFakeDevice +
                   ": it is built for gfx942 and the device is gfx950 "
                   "(rebuild the artifact for gfx950)");
  EXPECT_EQ(program_, nullptr);
  EXPECT_ERROR(load("xnack"), LOOMRT_ERROR_LOAD_FAILED,
               "cannot run '" + path + "' on " + kFakeDevice +
                   ": it is built for gfx950:xnack+, which needs xnack+, but "
                   "the device runs with xnack- (rebuild the artifact for "
                   "gfx950 without target features, or for gfx950:xnack-)");
  EXPECT_ERROR(load("cuda"), LOOMRT_ERROR_LOAD_FAILED,
               "cannot run '" + path + "' on " + kFakeDevice +
                   ": it is built for 'sm_90a', not an AMD GPU architecture "
                   "(gfxNNN, optionally with target features: "
                   "gfx942:xnack-)");
  EXPECT_ERROR(load("nokernel"), LOOMRT_ERROR_LOAD_FAILED,
               "hip program '" + path +
                   "': its code object (gfx950) has no kernel named "
                   "'loom_missing_kernel' (kernel_name must be the extern "
                   "\"C\" symbol): hipErrorNotFound (named symbol not found)");
  EXPECT_ERROR(load("badimage"), LOOMRT_ERROR_LOAD_FAILED,
               std::string(kFakeDevice) + ": cannot load the code object of '" +
                   path +
                   "' (gfx950, 32 bytes): hipErrorInvalidImage (device kernel "
                   "image is invalid)");
  EXPECT_ERROR(load("badabi"), LOOMRT_ERROR_ABI_MISMATCH,
               "hip program '" + path + "' has device ABI version " +
                   std::to_string(LOOM_DEVICE_ABI_VERSION + 1) +
                   "; this runtime reads versions 3 to " +
                   std::to_string(LOOM_DEVICE_ABI_VERSION) + " (rebuild it)");
  EXPECT_ERROR(load("null"), LOOMRT_ERROR_LOAD_FAILED,
               "hip program '" + path +
                   "': loom_device_program() returned "
                   "null");
  EXPECT_ERROR(load("inline"), LOOMRT_ERROR_INVALID_PROGRAM,
               "hip program '" + path +
                   "': its kernel takes its bindings by value "
                   "(LOOM_DEVICE_INLINE_BINDINGS), which the HIP backend does "
                   "not pass: its kernels take LoomKernelArgs alone");
  EXPECT_ERROR(load("bigsmem"), LOOMRT_ERROR_RESOURCES,
               std::string("program 'chain' wants 204800 bytes of dynamic "
                           "shared memory (LDS) per worker block; ") +
                   kFakeDevice + " allows at most 163840");
  EXPECT_ERROR(load("wide"), LOOMRT_ERROR_RESOURCES,
               std::string("program 'wide' needs 9 co-resident worker blocks "
                           "(128 threads and 0 bytes of dynamic shared memory "
                           "each (64 registers per thread)), but ") +
                   kFakeDevice +
                   " holds only 2 per CU x 4 CUs = 8 at once; a persistent "
                   "kernel with blocks waiting to start deadlocks, so it is "
                   "not launched (schedule it for at most 8 workers, or use "
                   "fewer threads or less shared memory)");
  EXPECT_ERROR(loomrt_program_load(device_, "/nonexistent/p.so", 0, &program_),
               LOOMRT_ERROR_LOAD_FAILED,
               "cannot load hip program '/nonexistent/p.so': No such file or "
               "directory");
  EXPECT_EQ(program_, nullptr);
  LoomProgramDesc desc{};
  EXPECT_ERROR(loomrt_program_from_desc(device_, &desc, 0, &program_),
               LOOMRT_ERROR_INVALID_ARGUMENT,
               std::string(kFakeDevice) +
                   ": loomrt_program_from_desc takes a host task table "
                   "(bodies in run_task); a hip program is a device artifact: "
                   "use loomrt_program_load");
  // Nothing the refused loads made is left behind.
  LoomFakeHipStats s = stats();
  EXPECT_EQ(s.live_modules, 0);
  EXPECT_EQ(s.live_events, 0);
  EXPECT_EQ(s.live_host_allocs, 0);
  EXPECT_EQ(s.live_device_allocs, 0);
  EXPECT_EQ(s.live_streams, 1); // the device's memory stream
  EXPECT_EQ(s.calls_without_device, 0);
  // Generic targets and matching features load.
  ASSERT_EQ(load("generic"), LOOMRT_SUCCESS) << loomrt_last_error();
  EXPECT_EQ(loomrt_program_destroy(program_), LOOMRT_SUCCESS);
  ASSERT_EQ(load("xnackoff"), LOOMRT_SUCCESS) << loomrt_last_error();
}

TEST_F(HipFake, DeviceWithoutCooperativeLaunchOrMappedMemory) {
  LoomFakeHipConfig c = defaultConfig();
  c.cooperative = 0;
  configure(c);
  createDevice();
  EXPECT_ERROR(load("chain"), LOOMRT_ERROR_RESOURCES,
               std::string(kFakeDevice) +
                   " does not support cooperative launches; program 'chain' "
                   "needs one to have all 3 worker blocks resident at once");
  c.cooperative = 1;
  c.can_map_host = 0;
  configure(c);
  loomrt_device *other = nullptr;
  ASSERT_EQ(loomrt_device_create("hip", 0, &other), LOOMRT_SUCCESS);
  {
    ScopedEnv env(LOOM_FAKE_HIP_ARTIFACT_ENV, "chain");
    EXPECT_ERROR(
        loomrt_program_load(other, fakeRuntime().c_str(), 0, &program_),
        LOOMRT_ERROR_RESOURCES,
        std::string(kFakeDevice) +
            " cannot map host memory, which the watchdog needs to "
            "see the workers' status while program 'chain' runs");
  }
  EXPECT_EQ(loomrt_device_destroy(other), LOOMRT_SUCCESS);
  EXPECT_EQ(stats().live_modules, 0);
}

TEST_F(HipFake, RunsManyLaunchesWithoutResets) {
  createDevice();
  ASSERT_EQ(load("chain"), LOOMRT_SUCCESS) << loomrt_last_error();
  void *x = bindX();
  for (uint64_t epoch = 1; epoch <= 5; ++epoch) {
    ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS) << loomrt_last_error();
    ASSERT_EQ(loomrt_synchronize(program_), LOOMRT_SUCCESS)
        << loomrt_last_error();
    std::vector<int64_t> out = readX(x);
    for (int64_t t = 0; t < 7; ++t)
      EXPECT_EQ(out[t], static_cast<int64_t>(100 * epoch) + t + 1)
          << "epoch " << epoch << " task " << t;
    for (int32_t e = 0; e < 7; ++e) {
      uint64_t count = 0;
      EXPECT_EQ(loomrt_program_event_count(program_, e, &count),
                LOOMRT_SUCCESS);
      EXPECT_EQ(count, epoch) << "event " << e;
    }
  }
  uint64_t ns = 0;
  EXPECT_EQ(loomrt_program_last_launch_ns(program_, &ns), LOOMRT_SUCCESS);
  EXPECT_GT(ns, 0u);
  LoomFakeHipStats s = stats();
  EXPECT_EQ(s.launches, 5);
  EXPECT_EQ(s.last_grid, 3u);
  EXPECT_EQ(s.last_block, 128u);
  EXPECT_EQ(s.last_smem, 0u);
  EXPECT_EQ(s.last_epoch, 5u);
  // 2 x the default watchdog (10 s) at clock64's 1 GHz.
  EXPECT_EQ(s.last_timeout_cycles, 20000000000ull);
  EXPECT_EQ(s.last_host_flags, 0x40000003u); // mapped|portable|coherent
  EXPECT_EQ(s.calls_without_device, 0);
  EXPECT_EQ(s.live_modules, 1);
  EXPECT_EQ(s.live_events, 2);
  EXPECT_EQ(loomrt_program_destroy(program_), LOOMRT_SUCCESS);
  program_ = nullptr;
  s = stats();
  EXPECT_EQ(s.live_modules, 0);
  EXPECT_EQ(s.live_events, 0);
  EXPECT_EQ(s.live_host_allocs, 0);
  EXPECT_EQ(s.live_device_allocs, 1); // x
  EXPECT_EQ(s.live_streams, 1);       // the device's memory stream
  for (void *ptr : memory_)
    EXPECT_EQ(loomrt_free(device_, ptr), LOOMRT_SUCCESS);
  memory_.clear();
  EXPECT_EQ(loomrt_device_destroy(device_), LOOMRT_SUCCESS);
  device_ = nullptr;
  s = stats();
  EXPECT_EQ(s.live_device_allocs, 0);
  EXPECT_EQ(s.live_streams, 0);
}

// The fake's hipModuleLaunchCooperativeKernel spends 50 ms on the host
// before its launch reaches the "GPU". Unqueued, the start event is reached
// first and those 50 ms are timed; queued, the launch waits behind the gate
// and only the kernel is (its 3 workers take well under 50 ms).
TEST_F(HipFake, QueuedLaunchTimesTheDeviceAlone) {
  constexpr uint64_t kSubmitNs = 50'000'000;
  LoomFakeHipConfig c = defaultConfig();
  c.launch_call_us = static_cast<int>(kSubmitNs / 1000);
  configure(c);
  createDevice();
  ASSERT_EQ(load("chain"), LOOMRT_SUCCESS) << loomrt_last_error();
  void *x = bindX();
  auto run = [&] {
    EXPECT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS) << loomrt_last_error();
    EXPECT_EQ(loomrt_synchronize(program_), LOOMRT_SUCCESS)
        << loomrt_last_error();
    uint64_t ns = 0;
    EXPECT_EQ(loomrt_program_last_launch_ns(program_, &ns), LOOMRT_SUCCESS);
    return ns;
  };
  EXPECT_GE(run(), kSubmitNs);
  ASSERT_EQ(loomrt_program_set_queued_launch(program_, 1), LOOMRT_SUCCESS)
      << loomrt_last_error();
  int32_t queued = 0;
  EXPECT_EQ(loomrt_program_queued_launch(program_, &queued), LOOMRT_SUCCESS);
  EXPECT_EQ(queued, 1);
  for (int64_t epoch = 2; epoch <= 3; ++epoch) {
    EXPECT_LT(run(), kSubmitNs) << "launch " << epoch;
    EXPECT_EQ(readX(x)[6], 100 * epoch + 7);
  }
  EXPECT_EQ(stats().gated_launches, 2);
  ASSERT_EQ(loomrt_program_set_queued_launch(program_, 0), LOOMRT_SUCCESS);
  EXPECT_GE(run(), kSubmitNs);
  EXPECT_EQ(stats().gated_launches, 2);
}

// A queued launch the runtime refuses still opens its gate: destroying the
// program waits for its stream, which a shut gate would hold forever.
TEST_F(HipFake, RefusedQueuedLaunchLeavesNoGateShut) {
  createDevice();
  ASSERT_EQ(load("chain"), LOOMRT_SUCCESS) << loomrt_last_error();
  bindX();
  ASSERT_EQ(loomrt_program_set_queued_launch(program_, 1), LOOMRT_SUCCESS)
      << loomrt_last_error();
  LoomFakeHipConfig fewer = defaultConfig();
  fewer.cu_count = 1; // 2 blocks fit now, the program has 3 workers
  configure(fewer);
  EXPECT_EQ(loomrt_launch(program_), LOOMRT_ERROR_RESOURCES);
  EXPECT_NE(std::string(loomrt_last_error()).find("do not fit at once now"),
            std::string::npos)
      << loomrt_last_error();
  configure(defaultConfig());
  // Destroyed on another thread, and within 5 s, or the stream is held.
  auto done = std::make_shared<std::promise<loomrt_status>>();
  std::future<loomrt_status> destroyed = done->get_future();
  std::thread([done, program = program_] {
    done->set_value(loomrt_program_destroy(program));
  }).detach();
  program_ = nullptr;
  ASSERT_EQ(destroyed.wait_for(std::chrono::seconds(5)),
            std::future_status::ready)
      << "the program's stream did not drain: a gate left shut";
  EXPECT_EQ(destroyed.get(), LOOMRT_SUCCESS);
  EXPECT_EQ(stats().gated_launches, 0);
}

TEST_F(HipFake, QueuedLaunchNeedsStreamMemoryOperations) {
  LoomFakeHipConfig c = defaultConfig();
  c.stream_mem_ops = 0;
  configure(c);
  createDevice();
  ASSERT_EQ(load("chain"), LOOMRT_SUCCESS) << loomrt_last_error();
  EXPECT_ERROR(loomrt_program_set_queued_launch(program_, 1),
               LOOMRT_ERROR_UNSUPPORTED,
               std::string("program 'chain' on ") + kFakeDevice +
                   " cannot queue its launches: hipStreamWaitValue32 on "
                   "mapped host memory failed: hipErrorNotSupported "
                   "(fake runtime error)");
  int32_t queued = -1;
  EXPECT_EQ(loomrt_program_queued_launch(program_, &queued), LOOMRT_SUCCESS);
  EXPECT_EQ(queued, 0);
  EXPECT_EQ(loomrt_program_set_queued_launch(program_, 0), LOOMRT_SUCCESS);
}

TEST_F(HipFake, LaunchesOnAStreamAreNotSupported) {
  createDevice();
  ASSERT_EQ(load("chain"), LOOMRT_SUCCESS) << loomrt_last_error();
  void *x = bindX();
  const std::string why =
      std::string("program 'chain' on ") + kFakeDevice +
      " cannot launch on a stream: the HIP backend's kernels (kernels/amd) "
      "read their bindings from device memory the runtime fills before each "
      "launch, and take their launch number from it; use loomrt_launch and "
      "loomrt_synchronize";
  EXPECT_ERROR(loomrt_launch_on_stream(program_, nullptr),
               LOOMRT_ERROR_UNSUPPORTED, why);
  EXPECT_EQ(loomrt_program_check(program_), LOOMRT_SUCCESS); // none made
  EXPECT_EQ(stats().launches, 0);
  // The program's own launches are unaffected.
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS) << loomrt_last_error();
  ASSERT_EQ(loomrt_synchronize(program_), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(readX(x)[6], 107);
}

TEST_F(HipFake, LaunchFromAnotherThread) {
  createDevice();
  ASSERT_EQ(load("chain"), LOOMRT_SUCCESS) << loomrt_last_error();
  void *x = bindX();
  std::thread([&] {
    EXPECT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS) << loomrt_last_error();
  }).join();
  std::thread([&] {
    EXPECT_EQ(loomrt_synchronize(program_), LOOMRT_SUCCESS)
        << loomrt_last_error();
  }).join();
  EXPECT_EQ(readX(x)[6], 107);
  EXPECT_EQ(stats().calls_without_device, 0);
}

TEST_F(HipFake, DynamicModeQueueIsNeverReset) {
  createDevice();
  ASSERT_EQ(load("dynamic"), LOOMRT_SUCCESS) << loomrt_last_error();
  void *x = bindX();
  for (uint64_t epoch = 1; epoch <= 4; ++epoch) {
    ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS) << loomrt_last_error();
    ASSERT_EQ(loomrt_synchronize(program_), LOOMRT_SUCCESS)
        << loomrt_last_error();
    EXPECT_EQ(readX(x)[6], static_cast<int64_t>(100 * epoch) + 7);
  }
  // The queue counter sits after the 7 events; every launch takes
  // num_tasks + num_workers = 10 tickets.
  uint64_t count = 0;
  EXPECT_EQ(loomrt_program_event_count(program_, 6, &count), LOOMRT_SUCCESS);
  EXPECT_EQ(count, 4u);
}

TEST_F(HipFake, BindingsAreCheckedBeforeALaunch) {
  createDevice();
  ASSERT_EQ(load("chain"), LOOMRT_SUCCESS) << loomrt_last_error();
  // Too small for x (7 x i64 = 56 bytes).
  void *small = alloc(32);
  ASSERT_EQ(loomrt_program_bind(program_, 0, small, nullptr, 0),
            LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_launch(program_), LOOMRT_ERROR_BINDING);
  std::string message = loomrt_last_error();
  EXPECT_TRUE(contains(message, "program 'chain' launch 1: buffer 'x' (index "
                                "0, i64[7]) bound to "))
      << message;
  EXPECT_TRUE(contains(message, " with dims [7] (56 bytes) runs past the end "
                                "of its allocation (32 bytes from "))
      << message;
  // Host memory the runtime does not know would fault the device.
  std::vector<int64_t> host(7);
  ASSERT_EQ(loomrt_program_bind(program_, 0, host.data(), nullptr, 0),
            LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_launch(program_), LOOMRT_ERROR_BINDING);
  message = loomrt_last_error();
  EXPECT_TRUE(
      contains(message, "is not memory the HIP runtime knows (unregistered "
                        "host memory): bind memory from loomrt_malloc on " +
                            std::string(kFakeDevice)))
      << message;
  EXPECT_EQ(stats().launches, 0);
  // A refused launch does not fail the program.
  void *x = bindX();
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS) << loomrt_last_error();
  ASSERT_EQ(loomrt_synchronize(program_), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(readX(x)[6], 107);
  // Freeing the bound memory makes the next launch check again.
  EXPECT_EQ(loomrt_free(device_, x), LOOMRT_SUCCESS);
  memory_.pop_back();
  EXPECT_EQ(loomrt_launch(program_), LOOMRT_ERROR_BINDING);
  EXPECT_TRUE(contains(loomrt_last_error(), "is not memory the HIP runtime "
                                            "knows"))
      << loomrt_last_error();
}

TEST_F(HipFake, KernelsOwnTimeoutWhenNobodyWatches) {
  createDevice();
  ASSERT_EQ(load("deadlock"), LOOMRT_SUCCESS) << loomrt_last_error();
  bindX();
  // timeout_cycles = 2 x 100 ms: the waits give up on their own while
  // nobody synchronizes.
  ASSERT_EQ(loomrt_program_set_watchdog_ms(program_, 100), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(loomrt_synchronize(program_), LOOMRT_ERROR_TIMEOUT);
  std::string message = loomrt_last_error();
  EXPECT_EQ(message.substr(0, message.find('\n')),
            "program 'deadlock' launch 1 ended with 2 workers unfinished: a "
            "wait gave up after timeout_cycles (200000000 cycles)")
      << message;
  EXPECT_TRUE(contains(message, "\n  worker 0: task 'a#0[0]' (id 0) waits for "
                                "event 1: count 0, needs 1 ("))
      << message;
  EXPECT_TRUE(contains(message, "(gave up: timeout_cycles)")) << message;
}

TEST_F(HipFake, WatchdogReportsADeadlock) {
  createDevice();
  ASSERT_EQ(load("deadlock"), LOOMRT_SUCCESS) << loomrt_last_error();
  bindX();
  ASSERT_EQ(loomrt_program_set_watchdog_ms(program_, 200), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS);
  auto start = std::chrono::steady_clock::now();
  EXPECT_ERROR(loomrt_synchronize(program_), LOOMRT_ERROR_TIMEOUT,
               "program 'deadlock' launch 1 stopped by the watchdog: no "
               "worker's status and no event count changed for 200 ms\n"
               "  worker 0: task 'a#0[0]' (id 0) waits for event 1: count 0, "
               "needs 1\n"
               "  worker 1: task 'b#1[0]' (id 1) waits for event 0: count 0, "
               "needs 1");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // The counters no longer agree with the epoch: no more launches.
  EXPECT_EQ(loomrt_launch(program_), LOOMRT_ERROR_PROGRAM_FAILED);
  EXPECT_EQ(stats().launches, 1);
}

TEST_F(HipFake, ReportDoesNotWaitForACopyQueuedBehindTheKernel) {
  LoomFakeHipConfig c = defaultConfig();
  c.shared_queue = 1;
  c.clock_khz = 10000000; // the kernel's own timeout only after 4 s
  configure(c);
  createDevice();
  ASSERT_EQ(load("deadlock"), LOOMRT_SUCCESS) << loomrt_last_error();
  bindX();
  ASSERT_EQ(loomrt_program_set_watchdog_ms(program_, 200), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS);
  auto start = std::chrono::steady_clock::now();
  // The counters cannot be read while the kernel runs: the report is made
  // from the records alone, and in time.
  EXPECT_ERROR(loomrt_synchronize(program_), LOOMRT_ERROR_TIMEOUT,
               "program 'deadlock' launch 1 stopped by the watchdog: no "
               "worker's status and no event count changed for 200 ms\n"
               "  worker 0: task 'a#0[0]' (id 0) waits for event 1: count 0, "
               "needs 1\n"
               "  worker 1: task 'b#1[0]' (id 1) waits for event 0: count 0, "
               "needs 1");
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(1500));
}

TEST_F(HipFake, FailedTaskStopsTheLaunch) {
  createDevice();
  ASSERT_EQ(load("fail"), LOOMRT_SUCCESS) << loomrt_last_error();
  bindX();
  ASSERT_EQ(loomrt_program_set_watchdog_ms(program_, 5000), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS);
  auto start = std::chrono::steady_clock::now();
  EXPECT_ERROR(loomrt_synchronize(program_), LOOMRT_ERROR_TASK_FAILED,
               "program 'fail' launch 1: task 'fail#3[0]' (id 3) on worker 0 "
               "failed with code 42");
  // The waiting workers were stopped by the abort flag, not the watchdog.
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(2500));
  EXPECT_EQ(loomrt_launch(program_), LOOMRT_ERROR_PROGRAM_FAILED);
}

TEST_F(HipFake, KernelFaultNamesDeviceArchKernelAndError) {
  createDevice();
  ASSERT_EQ(load("crash"), LOOMRT_SUCCESS) << loomrt_last_error();
  bindX();
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_synchronize(program_), LOOMRT_ERROR_DEVICE);
  std::string message = loomrt_last_error();
  EXPECT_EQ(message.substr(0, message.find('\n')),
            std::string(kFakeDevice) +
                ": kernel 'loom_fake_kernel' (gfx950) of program 'crash' "
                "launch 1 failed: hipErrorIllegalAddress (an illegal memory "
                "access was encountered); the device's context is unusable "
                "now (restart the process)");
  EXPECT_TRUE(contains(message, "\n  workers when it stopped:\n  worker 0: "
                                "running task 'crash#3[0]' (id 3)"))
      << message;
  EXPECT_EQ(loomrt_launch(program_), LOOMRT_ERROR_PROGRAM_FAILED);
}

TEST_F(HipFake, BodyIgnoringTheAbortFlagWedgesTheDevice) {
  createDevice();
  ASSERT_EQ(load("stuck"), LOOMRT_SUCCESS) << loomrt_last_error();
  bindX();
  ASSERT_EQ(loomrt_program_set_watchdog_ms(program_, 100), LOOMRT_SUCCESS);
  ASSERT_EQ(loomrt_launch(program_), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_synchronize(program_), LOOMRT_ERROR_TIMEOUT);
  std::string message = loomrt_last_error();
  EXPECT_TRUE(contains(message,
                       "program 'stuck' launch 1 stopped by the watchdog: no "
                       "worker's status and no event count changed for 100 ms\n  worker 0: "
                       "running task 'stuck#0[0]' (id 0)\n  worker 1: task "
                       "'after#1[0]' (id 1) waits for event 0: count 0, "
                       "needs 1\n"))
      << message;
  EXPECT_TRUE(contains(message,
                       "the kernel did not exit within 100 ms of the abort "
                       "flag; its workers now:\n  worker 0: running task "
                       "'stuck#0[0]' (id 0)"))
      << message;
  EXPECT_TRUE(
      contains(message, std::string(kFakeDevice) + " is left running it"))
      << message;
  void *ptr = nullptr;
  EXPECT_EQ(loomrt_malloc(device_, 64, &ptr), LOOMRT_ERROR_DEVICE);
  EXPECT_TRUE(contains(loomrt_last_error(),
                       std::string(kFakeDevice) +
                           " refuses memory calls: they would wait forever "
                           "for a kernel that did not stop (kernel "
                           "'loom_fake_kernel' (gfx950) of program 'stuck' "
                           "launch 1: the kernel did not exit"))
      << loomrt_last_error();
  // Destroying the program and the device leaves their memory to the
  // stuck kernel; let it finish before the fixture goes.
  EXPECT_EQ(loomrt_program_destroy(program_), LOOMRT_SUCCESS);
  program_ = nullptr;
  memory_.clear();
  EXPECT_EQ(loomrt_device_destroy(device_), LOOMRT_SUCCESS);
  device_ = nullptr;
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
}

#else

TEST(HipFake, NotBuilt) {
  GTEST_SKIP() << "built without LOOM_RT_FAKEHIP / LOOM_RT_FAKEHIP_OLD (the "
                  "paths of the fake HIP runtime libraries)";
}

#endif // LOOM_RT_FAKEHIP && LOOM_RT_FAKEHIP_OLD

//===----------------------------------------------------------------------===//
// A real AMD GPU (label gpu-amd)
//===----------------------------------------------------------------------===//

TEST(RuntimeHipGpu, RealDevice) {
  ScopedEnv env(kHipRuntimeEnv, nullptr);
  int count = 0;
  if (loomrt_device_count("hip", &count) != LOOMRT_SUCCESS)
    GTEST_SKIP() << "no AMD GPU driver here: " << loomrt_last_error();
  if (count == 0)
    GTEST_SKIP() << "the HIP runtime loads but sees no AMD GPU";
  loomrt_device *device = nullptr;
  ASSERT_EQ(loomrt_device_create("hip", 0, &device), LOOMRT_SUCCESS)
      << loomrt_last_error();
  std::printf("%s\n", loomrt_device_describe(device));
  // Memory round trip.
  void *a = nullptr;
  ASSERT_EQ(loomrt_malloc(device, 4096, &a), LOOMRT_SUCCESS)
      << loomrt_last_error();
  std::vector<unsigned char> host(4096, 0x3C), back(4096, 0);
  EXPECT_EQ(loomrt_memcpy(device, a, host.data(), 4096), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_memset(device, a, 0x7E, 16), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(loomrt_memcpy(device, back.data(), a, 4096), LOOMRT_SUCCESS)
      << loomrt_last_error();
  EXPECT_EQ(back[0], 0x7E);
  EXPECT_EQ(back[4095], 0x3C);
  EXPECT_EQ(loomrt_free(device, a), LOOMRT_SUCCESS);

  const char *artifact = std::getenv("LOOM_HIP_TEST_ARTIFACT");
  if (!artifact || !*artifact) {
    EXPECT_EQ(loomrt_device_destroy(device), LOOMRT_SUCCESS);
    GTEST_SKIP() << "LOOM_HIP_TEST_ARTIFACT is not set: only the device and "
                    "its memory were checked";
  }
  // Every buffer at its largest, zeroed; two launches, each must finish with
  // every event at epoch * needs.
  loomrt_program *program = nullptr;
  ASSERT_EQ(loomrt_program_load(device, artifact, 0, &program), LOOMRT_SUCCESS)
      << loomrt_last_error();
  const LoomProgramDesc *desc = nullptr;
  ASSERT_EQ(loomrt_program_desc(program, &desc), LOOMRT_SUCCESS);
  std::vector<void *> buffers;
  for (int32_t b = 0; b < desc->num_buffers; ++b) {
    size_t bytes = 0;
    ASSERT_EQ(loomrt_program_buffer_bytes(program, b, &bytes), LOOMRT_SUCCESS);
    void *ptr = nullptr;
    ASSERT_EQ(loomrt_malloc(device, bytes ? bytes : 1, &ptr), LOOMRT_SUCCESS)
        << loomrt_last_error();
    buffers.push_back(ptr);
    if (bytes) {
      EXPECT_EQ(loomrt_memset(device, ptr, 0, bytes), LOOMRT_SUCCESS);
    }
    const LoomBufferDesc &buffer = desc->buffers[b];
    std::vector<int64_t> dims(buffer.dims, buffer.dims + buffer.rank);
    for (int64_t &d : dims)
      if (d < 0)
        d = buffer.bound;
    ASSERT_EQ(loomrt_program_bind(program, b, ptr, dims.data(), buffer.rank),
              LOOMRT_SUCCESS)
        << loomrt_last_error();
  }
  for (uint64_t epoch = 1; epoch <= 2; ++epoch) {
    ASSERT_EQ(loomrt_launch(program), LOOMRT_SUCCESS) << loomrt_last_error();
    ASSERT_EQ(loomrt_synchronize(program), LOOMRT_SUCCESS)
        << loomrt_last_error();
    for (int32_t e = 0; e < desc->num_events; ++e) {
      uint64_t count = 0;
      EXPECT_EQ(loomrt_program_event_count(program, e, &count), LOOMRT_SUCCESS);
      EXPECT_EQ(count, epoch * static_cast<uint64_t>(desc->event_needs[e]))
          << "event " << e;
    }
  }
  uint64_t ns = 0;
  EXPECT_EQ(loomrt_program_last_launch_ns(program, &ns), LOOMRT_SUCCESS);
  std::printf("%s: last launch %.3f ms\n", artifact, ns / 1e6);
  EXPECT_EQ(loomrt_program_destroy(program), LOOMRT_SUCCESS);
  for (void *ptr : buffers)
    EXPECT_EQ(loomrt_free(device, ptr), LOOMRT_SUCCESS);
  EXPECT_EQ(loomrt_device_destroy(device), LOOMRT_SUCCESS);
}

} // namespace

#endif // LOOM_HIP_FAKE_RUNTIME
