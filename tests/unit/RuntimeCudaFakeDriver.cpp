//===- RuntimeCudaFakeDriver.cpp - A CUDA driver made of host threads -----===//
//
// See RuntimeCudaFake.h. Built twice: as a complete fake, and with
// LOOM_FAKE_CUDA_OLD as a "driver too old" that lacks
// cuLaunchCooperativeKernel.
//
// Only what the runtime's CUDA backend uses is here, with the checks a real
// driver makes that the backend could get wrong: a current context on the
// calling thread, pointers on the right side of a copy, the cooperative
// launch limit, the opt-in for more than 48 KiB of dynamic shared memory.
//
//===----------------------------------------------------------------------===//
#include "kernels/common/DeviceAbi.h"
#include "tests/unit/FakeStreamGate.h"
#include "tests/unit/RuntimeCudaFake.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using Clock = std::chrono::steady_clock;

constexpr CUresult kSuccess = 0, kInvalidValue = 1, kNoDevice = 100,
                   kInvalidDevice = 101, kInvalidImage = 200,
                   kInvalidContext = 201, kInvalidHandle = 400, kNotFound = 500,
                   kNotReady = 600, kIllegalAddress = 700,
                   kCooperativeTooLarge = 720, kNotSupported = 801;

struct Launch {
  std::atomic<int> remaining{0};
  std::atomic<bool> faulted{false};
  Clock::time_point start;
  Clock::time_point end; // written by the last worker out
  std::mutex mu;
  // A kernel's second parameter, copied at the launch call.
  std::vector<LoomBinding> bindings;
};

struct Stream {
  std::shared_ptr<Launch> current;
  std::shared_ptr<loom::fake::StreamGate> gate; // waiting for the next launch
  // A caller's stream (flags 0) or the legacy one: launches queue.
  bool queues = false;
  // Such a stream's last launch, with its parameters as passed: what a CUDA
  // graph holding it would launch again (loom_fake_cuda_replay).
  std::function<int()> replay;
};

/// The legacy default stream (a null CUstream).
Stream *orLegacy(Stream *stream) {
  static Stream *legacy = new Stream{nullptr, nullptr, true};
  return stream ? stream : legacy;
}

struct Event {
  bool recorded = false;
  std::shared_ptr<Launch> after; // completes when this launch ends
  std::shared_ptr<loom::fake::StreamGate> gate; // or when this gate opens
  Clock::time_point at;
};

struct Function {
  const LoomFakeCodeObject *code;
  int maxDynamicSmem = 0;
};

struct Module {
  Function function;
};

struct State {
  std::mutex mu;
  LoomFakeCudaConfig config{0, 1, 4, 9, 0, 2, 1, 1, 232448, 1, 0};
  LoomFakeCudaStats stats{};
  std::map<CUdeviceptr, size_t> device; // allocations
  std::map<CUdeviceptr, size_t> host;   // pinned allocations
  std::atomic<bool> sticky{false};      // a kernel faulted
};

State &state() {
  static State *s = new State; // outlives detached kernel threads
  return *s;
}

char gContexts[8];
thread_local void *tlsCurrent = nullptr;

/// Calls that need a current context fail without one, as the real driver's
/// do: the backend must make its context current on every entry thread.
bool noContext() {
  if (tlsCurrent)
    return false;
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.calls_without_context;
  return true;
}

bool inside(const std::map<CUdeviceptr, size_t> &allocations, CUdeviceptr p,
            size_t bytes) {
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin())
    return false;
  --it;
  return p >= it->first && p + bytes <= it->first + it->second;
}

bool isDevice(CUdeviceptr p, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  return inside(state().device, p, bytes) || inside(state().host, p, bytes);
}

template <typename T> T load(const T *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
template <typename T> void store(T *p, T v) {
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

bool startsWith(const char *name, const char *prefix) {
  return name && std::strncmp(name, prefix, std::strlen(prefix)) == 0;
}

//--- The kernel ------------------------------------------------------------//

/// One worker block, as kernels/nvidia/Interpreter.cuh runs it: a wait that
/// is not already satisfied is published; bodies are not; a worker leaving a wait records -1 (abort
/// flag) or -2 (its own timeout, and raises the flag); a failed body records
/// (task, -1) and its code and raises the flag; a finished worker records
/// task -1. Dynamic mode takes tickets from events[num_events].
void runWorker(std::shared_ptr<Launch> launch, LoomKernelArgs args,
               const LoomProgramDesc *p, int32_t w, int32_t grid) {
  LoomWorkerStatus *me = &args.status[w];
  int32_t *abortFlag = const_cast<int32_t *>(args.abort_flag);
  auto leave = [&] {
    std::lock_guard<std::mutex> lock(launch->mu);
    if (launch->remaining.fetch_sub(1) == 1)
      launch->end = Clock::now();
  };
  // What a real kernel would fault on.
  if (!args.bindings || !args.events || !args.control ||
      (p->workspace_bytes > 0 && !args.workspace)) {
    launch->faulted = true;
    return leave();
  }
  // Launch numbers (DeviceAbi.h): epoch 0 runs this worker's count + 1,
  // stored back as it leaves; nothing at all once a launch failed.
  const bool deviceNumbered = args.epoch == 0;
  unsigned long long *control = args.control;
  if (deviceNumbered && load(&control[LOOM_CONTROL_FAILED]) != 0)
    return leave();
  const unsigned long long epoch =
      deviceNumbered ? load(&control[LOOM_CONTROL_WORKERS + w]) + 1
                     : args.epoch;
  auto finish = [&] {
    if (deviceNumbered)
      __atomic_store_n(&control[LOOM_CONTROL_WORKERS + w], epoch,
                       __ATOMIC_RELAXED);
    leave();
  };
  auto publishWait = [&](int32_t task, int32_t event, uint64_t seen,
                         uint64_t needed) {
    store(&me->task, task);
    store(&me->event, event);
    store(&me->seen, seen);
    store(&me->needed, needed);
  };
  // Every worker that gives up or fails also marks the control words, so
  // later launches numbered on the device do nothing.
  auto raiseAbort = [&] {
    __atomic_store_n(abortFlag, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&control[LOOM_CONTROL_FAILED], 1ull, __ATOMIC_RELAXED);
  };
  /// 0, or why the wait ended without its count.
  auto await = [&](int32_t task, int32_t e) -> int {
    unsigned long long needed =
        epoch * static_cast<unsigned long long>(p->event_needs[e]);
    unsigned long long seen = load(&args.events[e]);
    if (seen >= needed)
      return 0;
    publishWait(task, e, seen, needed);
    Clock::time_point began = Clock::now();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      if ((seen = load(&args.events[e])) >= needed)
        return 0;
      if (launch->faulted.load())
        return 1; // the grid is gone; the record stays as it was
      store(&me->seen, static_cast<uint64_t>(seen));
      if (__atomic_load_n(abortFlag, __ATOMIC_RELAXED) != 0) {
        store(&me->error, -1);
        __atomic_store_n(&control[LOOM_CONTROL_FAILED], 1ull, __ATOMIC_RELAXED);
        return 1;
      }
      // 1 GHz: cycles are nanoseconds.
      if (static_cast<unsigned long long>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(
                  Clock::now() - began)
                  .count()) > args.timeout_cycles) {
        store(&me->error, -2);
        raiseAbort();
        return 1;
      }
    }
  };
  /// 0, or the body's error code; -1000: the kernel faulted.
  auto body = [&](int32_t task) -> int32_t {
    const char *name = p->task_names[task];
    if (startsWith(name, "fail"))
      return 42;
    if (startsWith(name, "crash"))
      return -1000;
    if (startsWith(name, "stuck"))
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    if (startsWith(name, "slow"))
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (startsWith(name, "step")) {
      auto *x = static_cast<int64_t *>(args.bindings[0].data);
      x[task] =
          (task == 0 ? 100 * static_cast<int64_t>(epoch) : x[task - 1]) + 1;
    }
    return 0;
  };

  // A profiled kernel's records (kernels/nvidia/Interpreter.cuh,
  // loomProfiledLoop), with the host's steady clock for %globaltimer.
  auto nowNs = [] {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            Clock::now().time_since_epoch())
            .count());
  };
  // A program named "unrecorded" claims a profile but records nothing.
  auto record = [&](int32_t index, uint64_t pick, uint64_t start) {
    if (!args.profile || std::strcmp(p->name, "unrecorded") == 0)
      return;
    LoomTaskTiming &r = args.profile[index];
    r.pick = pick;
    r.start = start;
    r.end = nowNs();
    r.worker = w;
    r.epoch = static_cast<uint32_t>(epoch);
  };
  const uint64_t entry = nowNs();

  const bool dynamic = p->mode == LOOM_SCHEDULE_DYNAMIC;
  unsigned long long *queue = args.events + p->num_events;
  const unsigned long long ticketBase =
      (epoch - 1) * static_cast<unsigned long long>(p->num_tasks + grid);
  int32_t pos = dynamic ? 0 : p->worker_begin[w];
  const int32_t end = dynamic ? 0 : p->worker_begin[w + 1];
  for (;;) {
    int32_t task = -1;
    if (dynamic) {
      unsigned long long ticket =
          __atomic_fetch_add(queue, 1ull, __ATOMIC_RELAXED) - ticketBase;
      if (ticket < static_cast<unsigned long long>(p->num_tasks))
        task = p->worker_tasks[ticket];
    } else if (pos < end) {
      task = p->worker_tasks[pos++];
    }
    if (task < 0)
      break;
    const uint64_t pick = nowNs();
    for (int32_t k = p->task_wait_begin[task]; k < p->task_wait_begin[task + 1];
         ++k)
      if (await(task, p->wait_events[k]) != 0)
        return finish();
    const uint64_t start = nowNs();
    int32_t error = body(task);
    if (error == -1000) {
      launch->faulted = true;
      return leave();
    }
    if (error != 0) {
      publishWait(task, -1, 0, 0);
      store(&me->error, error);
      raiseAbort();
      return finish();
    }
    record(task, pick, start); // before the triggers, as the loop does
    for (int32_t k = p->task_trigger_begin[task];
         k < p->task_trigger_begin[task + 1]; ++k)
      __atomic_fetch_add(&args.events[p->trigger_events[k]], 1ull,
                         __ATOMIC_RELEASE);
  }
  record(p->num_tasks + w, entry, entry);
  publishWait(-1, -1, 0, 0);
  store(&me->error, 0);
  finish();
}

CUresult streamState(Stream *s) {
  s = orLegacy(s);
  // A gate no launch took still holds the stream until it opens.
  if (s->gate && !s->gate->satisfied())
    return kNotReady;
  if (!s->current)
    return kSuccess;
  if (s->current->remaining.load() > 0)
    return kNotReady;
  if (s->current->faulted.load()) {
    state().sticky = true;
    return kIllegalAddress;
  }
  return kSuccess;
}

CUresult elapsed(float *ms, Event *start, Event *end) {
  if (noContext())
    return kInvalidContext;
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

} // namespace

extern "C" {

//--- Test controls ---------------------------------------------------------//

__attribute__((visibility("default"))) void
loom_fake_cuda_configure(const LoomFakeCudaConfig *config) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().config = *config;
  state().stats.launches = 0;
  state().stats.gated_launches = 0;
  state().stats.calls_without_context = 0;
  state().stats.max_dynamic_smem_attribute = 0;
  state().sticky = false;
}

__attribute__((visibility("default"))) int loom_fake_cuda_replay(void *stream) {
  Stream *s = orLegacy(static_cast<Stream *>(stream));
  return s->replay ? s->replay() : kInvalidValue;
}

__attribute__((visibility("default"))) void
loom_fake_cuda_stats(LoomFakeCudaStats *stats) {
  std::lock_guard<std::mutex> lock(state().mu);
  *stats = state().stats;
}

//--- Errors, init, devices -------------------------------------------------//

CUresult cuGetErrorName(CUresult r, const char **out) {
  switch (r) {
  case kSuccess:
    *out = "CUDA_SUCCESS";
    return kSuccess;
  case kInvalidValue:
    *out = "CUDA_ERROR_INVALID_VALUE";
    return kSuccess;
  case kNoDevice:
    *out = "CUDA_ERROR_NO_DEVICE";
    return kSuccess;
  case kInvalidDevice:
    *out = "CUDA_ERROR_INVALID_DEVICE";
    return kSuccess;
  case kInvalidImage:
    *out = "CUDA_ERROR_INVALID_IMAGE";
    return kSuccess;
  case kInvalidContext:
    *out = "CUDA_ERROR_INVALID_CONTEXT";
    return kSuccess;
  case kNotFound:
    *out = "CUDA_ERROR_NOT_FOUND";
    return kSuccess;
  case kNotReady:
    *out = "CUDA_ERROR_NOT_READY";
    return kSuccess;
  case kIllegalAddress:
    *out = "CUDA_ERROR_ILLEGAL_ADDRESS";
    return kSuccess;
  case kCooperativeTooLarge:
    *out = "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE";
    return kSuccess;
  case kNotSupported:
    *out = "CUDA_ERROR_NOT_SUPPORTED";
    return kSuccess;
  }
  *out = nullptr;
  return kInvalidValue;
}

CUresult cuGetErrorString(CUresult r, const char **out) {
  switch (r) {
  case kIllegalAddress:
    *out = "an illegal memory access was encountered";
    return kSuccess;
  case kNoDevice:
    *out = "no CUDA-capable device is detected";
    return kSuccess;
  case kInvalidValue:
    *out = "invalid argument";
    return kSuccess;
  case kInvalidImage:
    *out = "device kernel image is invalid";
    return kSuccess;
  }
  const char *name = nullptr;
  if (cuGetErrorName(r, &name) != kSuccess)
    return kInvalidValue;
  *out = "fake driver error";
  return kSuccess;
}

CUresult cuInit(unsigned) { return state().config.init_result; }

CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return kSuccess;
}

CUresult cuDeviceGetCount(int *count) {
  *count = state().config.devices;
  return kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= state().config.devices)
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetName(char *name, int len, int device) {
  std::snprintf(name, static_cast<size_t>(len), "Fake GPU %d", device);
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  const LoomFakeCudaConfig &c = state().config;
  switch (attribute) {
  case 1:
    *value = 1024;
    return kSuccess; // max threads per block
  case 13:
    *value = 1000000;
    return kSuccess; // clock, kHz: 1 GHz
  case 16:
    *value = c.sm_count;
    return kSuccess;
  case 19:
    *value = c.can_map_host;
    return kSuccess;
  case 41:
    *value = 1;
    return kSuccess; // unified addressing
  case 75:
    *value = c.cc_major;
    return kSuccess;
  case 76:
    *value = c.cc_minor;
    return kSuccess;
  case 95:
    *value = c.cooperative;
    return kSuccess;
  case 97:
    *value = c.max_smem_optin;
    return kSuccess;
  }
  return kInvalidValue;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int device) {
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.primary_retains;
  *ctx = &gContexts[device & 7];
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(int) {
  std::lock_guard<std::mutex> lock(state().mu);
  --state().stats.primary_retains;
  return kSuccess;
}

CUresult cuCtxSetCurrent(void *ctx) {
  tlsCurrent = ctx;
  return kSuccess;
}

//--- Memory ----------------------------------------------------------------//

CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes) {
  if (noContext())
    return kInvalidContext;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return 2;
  std::lock_guard<std::mutex> lock(state().mu);
  *out = reinterpret_cast<CUdeviceptr>(p);
  state().device[*out] = bytes;
  ++state().stats.live_device_allocs;
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  if (noContext())
    return kInvalidContext;
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().device.erase(p))
    return kInvalidValue;
  --state().stats.live_device_allocs;
  std::free(reinterpret_cast<void *>(p));
  return kSuccess;
}

CUresult cuMemHostAlloc(void **out, size_t bytes, unsigned) {
  if (noContext())
    return kInvalidContext;
  void *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  std::lock_guard<std::mutex> lock(state().mu);
  *out = p;
  state().host[reinterpret_cast<CUdeviceptr>(p)] = bytes;
  ++state().stats.live_host_allocs;
  return kSuccess;
}

CUresult cuMemFreeHost(void *p) {
  if (noContext())
    return kInvalidContext;
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().host.erase(reinterpret_cast<CUdeviceptr>(p)))
    return kInvalidValue;
  --state().stats.live_host_allocs;
  std::free(p);
  return kSuccess;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *out, void *p, unsigned) {
  if (noContext())
    return kInvalidContext;
  *out = reinterpret_cast<CUdeviceptr>(p);
  return kSuccess;
}

CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr p) {
  if (noContext())
    return kInvalidContext;
  if (attribute != 2) // memory type only
    return kInvalidValue;
  std::lock_guard<std::mutex> lock(state().mu);
  if (inside(state().device, p, 0))
    *static_cast<unsigned *>(data) = 2; // device
  else if (inside(state().host, p, 0))
    *static_cast<unsigned *>(data) = 1; // pinned host
  else
    return kInvalidValue;
  return kSuccess;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void *) {
  if (noContext())
    return kInvalidContext;
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
               bytes);
  return kSuccess;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              void *) {
  if (noContext())
    return kInvalidContext;
  if (!isDevice(dst, bytes))
    return kInvalidValue;
  std::memmove(reinterpret_cast<void *>(dst), src, bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes,
                              void *) {
  if (noContext())
    return kInvalidContext;
  if (!isDevice(src, bytes))
    return kInvalidValue;
  std::memmove(dst, reinterpret_cast<void *>(src), bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                              void *) {
  if (noContext())
    return kInvalidContext;
  if (!isDevice(dst, bytes) || !isDevice(src, bytes))
    return kInvalidValue;
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
               bytes);
  return kSuccess;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t bytes,
                         void *) {
  if (noContext())
    return kInvalidContext;
  if (!isDevice(dst, bytes))
    return kInvalidValue;
  std::memset(reinterpret_cast<void *>(dst), value, bytes);
  return kSuccess;
}

//--- Modules and functions -------------------------------------------------//

CUresult cuModuleLoadData(Module **out, const void *image) {
  if (noContext())
    return kInvalidContext;
  auto *code = static_cast<const LoomFakeCodeObject *>(image);
  if (std::memcmp(code->magic, LOOM_FAKE_CUBIN_MAGIC,
                  sizeof(LOOM_FAKE_CUBIN_MAGIC)) != 0)
    return kInvalidImage;
  *out = new Module{Function{code}};
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.live_modules;
  return kSuccess;
}

CUresult cuModuleUnload(Module *module) {
  if (noContext())
    return kInvalidContext;
  delete module;
  std::lock_guard<std::mutex> lock(state().mu);
  --state().stats.live_modules;
  return kSuccess;
}

CUresult cuModuleGetFunction(Function **out, Module *module, const char *name) {
  if (noContext())
    return kInvalidContext;
  if (std::strcmp(name, module->function.code->kernel_name) != 0)
    return kNotFound;
  *out = &module->function;
  return kSuccess;
}

CUresult cuFuncSetAttribute(Function *f, int attribute, int value) {
  if (noContext())
    return kInvalidContext;
  if (attribute != 8 || value > state().config.max_smem_optin)
    return kInvalidValue;
  f->maxDynamicSmem = value;
  std::lock_guard<std::mutex> lock(state().mu);
  state().stats.max_dynamic_smem_attribute = value;
  return kSuccess;
}

CUresult cuFuncGetAttribute(int *value, int attribute, Function *) {
  if (noContext())
    return kInvalidContext;
  if (attribute != 4)
    return kInvalidValue;
  *value = 64; // registers per thread
  return kSuccess;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, Function *f,
                                                     int threads, size_t smem) {
  if (noContext())
    return kInvalidContext;
  const int limit =
      f->maxDynamicSmem > 48 * 1024 ? f->maxDynamicSmem : 48 * 1024;
  *blocks = threads > 1024 || smem > static_cast<size_t>(limit)
                ? 0
                : state().config.blocks_per_sm;
  return kSuccess;
}

#ifndef LOOM_FAKE_CUDA_OLD
CUresult cuLaunchCooperativeKernel(Function *f, unsigned gx, unsigned gy,
                                   unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned smem, Stream *stream,
                                   void **params) {
  if (noContext())
    return kInvalidContext;
  const LoomFakeCudaConfig &c = state().config;
  if (state().sticky)
    return kIllegalAddress;
  if (!c.cooperative)
    return kNotSupported;
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || bx > 1024)
    return kInvalidValue;
  if (gx > static_cast<unsigned>(c.sm_count * c.blocks_per_sm))
    return kCooperativeTooLarge;
  const unsigned limit =
      f->maxDynamicSmem > 48 * 1024 ? f->maxDynamicSmem : 48 * 1024;
  if (smem > limit)
    return kInvalidValue;
  stream = orLegacy(stream);
  std::shared_ptr<Launch> previous = stream->current;
  const bool behind = previous && previous->remaining.load() > 0;
  if (behind && !stream->queues)
    return kInvalidValue; // the backend never overlaps its own launches
  LoomKernelArgs args = *static_cast<LoomKernelArgs *>(params[0]);
  const LoomProgramDesc *program = f->code->program;
  if (static_cast<int32_t>(gx) != program->num_workers)
    return kInvalidValue;
  auto launch = std::make_shared<Launch>();
  // Parameters are copied during the call, as the driver copies them.
  if (f->code->inline_bindings) {
    if (!params[1])
      return kInvalidValue;
    const auto *bindings = static_cast<const LoomBinding *>(params[1]);
    launch->bindings.assign(
        bindings,
        bindings + (program->num_buffers > 1 ? program->num_buffers : 1));
    if (!args.bindings)
      args.bindings = launch->bindings.data();
  }
  {
    std::lock_guard<std::mutex> lock(state().mu);
    LoomFakeCudaStats &s = state().stats;
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
  launch->remaining = static_cast<int>(gx);
  stream->current = launch;
  if (stream->queues) {
    std::vector<LoomBinding> byValue = launch->bindings;
    LoomKernelArgs passed = *static_cast<LoomKernelArgs *>(params[0]);
    stream->replay = [=]() mutable {
      void *again[] = {&passed, byValue.empty() ? nullptr : byValue.data()};
      return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, smem, stream,
                                       again);
    };
  }
  auto start = [=](bool gated) {
    if (gated) {
      std::lock_guard<std::mutex> lock(state().mu);
      ++state().stats.gated_launches;
    }
    launch->start = Clock::now();
    for (unsigned w = 0; w < gx; ++w)
      std::thread(runWorker, launch, args, program, static_cast<int32_t>(w),
                  static_cast<int32_t>(gx))
          .detach();
  };
  if (!behind) {
    loom::fake::startBehind(std::move(stream->gate), start);
    return kSuccess;
  }
  // Queued behind the launch still running there (a faulted one takes the
  // queue down with it).
  std::thread([previous, launch, start] {
    while (previous->remaining.load() > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (previous->faulted.load()) {
      launch->faulted = true;
      launch->remaining = 0;
      return;
    }
    start(false);
  }).detach();
  return kSuccess;
}
#endif

//--- Streams and events ----------------------------------------------------//

CUresult cuStreamCreate(Stream **out, unsigned flags) {
  if (noContext())
    return kInvalidContext;
  *out = new Stream;
  (*out)->queues = flags == 0;
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.live_streams;
  return kSuccess;
}

CUresult cuStreamDestroy_v2(Stream *stream) {
  if (noContext())
    return kInvalidContext;
  delete stream;
  std::lock_guard<std::mutex> lock(state().mu);
  --state().stats.live_streams;
  return kSuccess;
}

CUresult cuStreamQuery(Stream *stream) {
  if (noContext())
    return kInvalidContext;
  return streamState(stream);
}

CUresult cuStreamSynchronize(Stream *stream) {
  if (noContext())
    return kInvalidContext;
  CUresult r;
  while ((r = streamState(stream)) == kNotReady)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  return r;
}

CUresult cuStreamIsCapturing(Stream *stream, int *status) {
  if (noContext())
    return kInvalidContext;
  *status = state().config.streams_capturing && orLegacy(stream)->queues;
  return kSuccess;
}

CUresult cuEventCreate(Event **out, unsigned) {
  if (noContext())
    return kInvalidContext;
  *out = new Event;
  std::lock_guard<std::mutex> lock(state().mu);
  ++state().stats.live_events;
  return kSuccess;
}

CUresult cuEventDestroy_v2(Event *event) {
  if (noContext())
    return kInvalidContext;
  delete event;
  std::lock_guard<std::mutex> lock(state().mu);
  --state().stats.live_events;
  return kSuccess;
}

CUresult cuStreamWaitValue32_v2(Stream *stream, CUdeviceptr addr,
                                uint32_t value, unsigned flags) {
  if (noContext())
    return kInvalidContext;
  if (!state().config.stream_mem_ops)
    return kNotSupported;
  if (flags != 0 || addr % 4 != 0 || !isDevice(addr, 4))
    return kInvalidValue;
  // A wait already satisfied is nothing to wait for.
  if (auto gate = loom::fake::makeStreamGate(
          reinterpret_cast<const uint32_t *>(addr), value, /*wraps=*/true))
    stream->gate = gate;
  return kSuccess;
}

CUresult cuEventRecord(Event *event, Stream *stream) {
  if (noContext())
    return kInvalidContext;
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

// Only the pre-12.8 name, never cuEventElapsedTime_v2: the runtime must
// fall back to it.
CUresult cuEventElapsedTime(float *ms, Event *start, Event *end) {
  return elapsed(ms, start, end);
}

} // extern "C"
