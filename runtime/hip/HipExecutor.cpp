//===- HipExecutor.cpp - Running a program as one HIP kernel --------------===//

#include "runtime/hip/HipExecutor.h"

#include "runtime/hip/HipChecks.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

namespace loom {
namespace rt {
namespace hip {

namespace {

size_t roundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

/// How long a report waits for the event counters.
constexpr std::chrono::milliseconds kReportCopyWait{100};

unsigned char *offsetPtr(void *base, size_t offset) {
  return static_cast<unsigned char *>(base) + offset;
}

} // namespace

Status HipExecutor::create(std::shared_ptr<HipContext> context,
                           std::shared_ptr<const ProgramTable> table,
                           std::shared_ptr<const DeviceArtifact> artifact,
                           std::unique_ptr<Executable> *out) {
  std::unique_ptr<HipExecutor> executor(new HipExecutor(
      std::move(context), std::move(table), std::move(artifact)));
  // On failure the destructor frees whatever load() got.
  if (Status s = executor->load(); !s.ok())
    return s;
  *out = std::move(executor);
  return Status();
}

HipExecutor::HipExecutor(std::shared_ptr<HipContext> context,
                         std::shared_ptr<const ProgramTable> table,
                         std::shared_ptr<const DeviceArtifact> artifact)
    : ctx_(std::move(context)), table_(std::move(table)),
      artifact_(std::move(artifact)), numWorkers_(table_->numWorkers()) {}

std::string HipExecutor::what() const {
  const LoomDeviceProgram &p = artifact_->program();
  return "kernel " + quoted(p.kernel_name) + " (" + p.arch + ") of program " +
         quoted(table_->name()) + " launch " + std::to_string(epoch_);
}

Status HipExecutor::load() {
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  if (Status s = loadKernel(); !s.ok())
    return s;
  return allocate();
}

Status HipExecutor::loadKernel() {
  const HipRuntime &rt = ctx_->runtime();
  const LoomDeviceProgram &p = artifact_->program();
  const std::string &path = artifact_->path();
  const HipDeviceInfo &info = ctx_->info();

  if (hipError_t r = rt.hipModuleLoadData(&module_, p.code_object);
      r != hipSuccess) {
    module_ = nullptr;
    return ctx_->fail(LOOMRT_ERROR_LOAD_FAILED, r,
                      "cannot load the code object of " + quoted(path) + " (" +
                          p.arch + ", " + std::to_string(p.code_object_size) +
                          " bytes)");
  }
  if (hipError_t r =
          rt.hipModuleGetFunction(&function_, module_, p.kernel_name);
      r != hipSuccess) {
    function_ = nullptr;
    if (r == hipErrorNotFound || r == hipErrorInvalidDeviceFunction)
      return makeError(LOOMRT_ERROR_LOAD_FAILED, "hip program ", quoted(path),
                       ": its code object (", p.arch, ") has no kernel named ",
                       quoted(p.kernel_name),
                       " (kernel_name must be the extern \"C\" symbol): ",
                       hipErrorText(rt, r));
    return ctx_->fail(LOOMRT_ERROR_LOAD_FAILED, r,
                      "cannot find kernel " + quoted(p.kernel_name) + " in " +
                          quoted(path) + " (" + p.arch + ")");
  }

  DeviceBlockShape shape{numWorkers_, p.threads_per_block,
                         p.dynamic_smem_bytes};
  int blocksPerCu = 0;
  if (hipError_t r = rt.hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
          &blocksPerCu, function_, p.threads_per_block,
          static_cast<size_t>(p.dynamic_smem_bytes));
      r != hipSuccess)
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r,
                      "cannot compute the occupancy of kernel " +
                          quoted(p.kernel_name) + " (" + p.arch + ")");
  int registers = -1;
  if (rt.hipFuncGetAttribute &&
      rt.hipFuncGetAttribute(&registers, HIP_FUNC_ATTRIBUTE_NUM_REGS,
                             function_) != hipSuccess)
    registers = -1;
  if (Status s =
          checkCoResidency(table_->name(), shape, blocksPerCu, registers, info);
      !s.ok())
    return s;
  // Residency of all blocks is guaranteed only by a cooperative launch.
  if (!info.cooperativeLaunch)
    return makeError(LOOMRT_ERROR_RESOURCES, ctx_->description(),
                     " does not support cooperative launches; program ",
                     quoted(table_->name()), " needs one to have all ",
                     numWorkers_, " worker blocks resident at once");
  return Status();
}

Status HipExecutor::allocate() {
  const HipRuntime &rt = ctx_->runtime();
  const HipDeviceInfo &info = ctx_->info();
  const std::string who = "program " + quoted(table_->name());
  if (!info.canMapHostMemory)
    return makeError(LOOMRT_ERROR_RESOURCES, ctx_->description(),
                     " cannot map host memory, which the watchdog needs to "
                     "see the workers' status while ",
                     who, " runs");

  if (hipError_t r =
          rt.hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking);
      r != hipSuccess) {
    stream_ = nullptr;
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, who,
                      ": cannot create its stream");
  }
  for (hipEvent_t *event : {&start_, &end_})
    if (hipError_t r = rt.hipEventCreateWithFlags(event, hipEventDefault);
        r != hipSuccess) {
      *event = nullptr;
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, who,
                        ": cannot create its timing events");
    }

  // The events, dynamic mode's queue and the control words
  // (deviceCounterCount); like the events they only grow. Zero-sized arrays
  // still get a valid pointer: the kernel may form it.
  const size_t eventBytes =
      deviceCounterCount(*table_) * sizeof(unsigned long long);
  const size_t bindingBytes =
      std::max<size_t>(1, table_->numBuffers()) * sizeof(LoomBinding);
  const int64_t workspaceBytes = table_->desc().workspace_bytes;
  struct {
    void **ptr;
    size_t bytes;
    const char *what;
  } arrays[] = {
      {&events_, eventBytes, "event counters"},
      {&bindings_, bindingBytes, "bindings"},
      {&workspace_, static_cast<size_t>(workspaceBytes), "workspace"},
  };
  for (auto &a : arrays) {
    if (a.bytes == 0)
      continue;
    if (hipError_t r = rt.hipMalloc(a.ptr, a.bytes); r != hipSuccess) {
      *a.ptr = nullptr;
      return ctx_->fail(LOOMRT_ERROR_OUT_OF_MEMORY, r, who,
                        ": cannot allocate its ", a.bytes, "-byte ", a.what);
    }
  }

  // One pinned block the device reaches through the mapping: status records,
  // then the abort flag and the launch gate on cache lines of their own, then
  // the bindings' staging, then where reports copy the event counters to.
  // Coherent (fine-grained): both sides see the other's writes while the kernel
  // runs, which is the whole point.
  const size_t statusBytes =
      static_cast<size_t>(numWorkers_) * sizeof(LoomWorkerStatus);
  abortOffset_ = roundUp(statusBytes, 128);
  gateOffset_ = abortOffset_ + 128;
  const size_t stagingOffset = gateOffset_ + 128;
  const size_t countsOffset =
      roundUp(stagingOffset + std::max<size_t>(1, table_->numBuffers()) *
                                  sizeof(LoomBinding),
              128);
  const size_t hostBytes =
      countsOffset + deviceCounterCount(*table_) * sizeof(uint64_t);
  if (hipError_t r = rt.hipHostMalloc(
          &host_, hostBytes,
          hipHostMallocMapped | hipHostMallocPortable | hipHostMallocCoherent);
      r != hipSuccess) {
    host_ = nullptr;
    return ctx_->fail(LOOMRT_ERROR_OUT_OF_MEMORY, r, who, ": cannot allocate ",
                      hostBytes, " bytes of mapped host memory");
  }
  if (hipError_t r = rt.hipHostGetDevicePointer(&hostDevice_, host_, 0);
      r != hipSuccess) {
    // With unified addressing pinned memory is mapped at its host address.
    if (!info.unifiedAddressing)
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, who,
                        ": cannot map its status memory into the device");
    hostDevice_ = host_;
  }
  std::memset(host_, 0, hostBytes);
  status_ = reinterpret_cast<volatile LoomWorkerStatus *>(host_);
  abort_ = reinterpret_cast<volatile int32_t *>(offsetPtr(host_, abortOffset_));
  gate_ = reinterpret_cast<volatile uint32_t *>(offsetPtr(host_, gateOffset_));
  staging_ = reinterpret_cast<LoomBinding *>(offsetPtr(host_, stagingOffset));
  countsHost_ = reinterpret_cast<uint64_t *>(offsetPtr(host_, countsOffset));
  resetWorkerStatus(status_, numWorkers_);

  // Zeroed once. Launch e waits for e * needs and takes tickets from
  // (e - 1) * (num_tasks + num_workers), so no launch resets them.
  hipError_t r = rt.hipMemsetAsync(events_, 0, eventBytes, stream_);
  if (r == hipSuccess)
    r = rt.hipStreamSynchronize(stream_);
  if (r != hipSuccess)
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, who,
                      ": cannot zero its event counters");
  return Status();
}

void HipExecutor::release() {
  const HipRuntime &rt = ctx_->runtime();
  if (!ctx_->makeCurrent().ok())
    return;
  if (stream_)
    (void)rt.hipStreamSynchronize(stream_);
  // A report's copy of the counters that timed out may still be queued on
  // the memory stream, headed for host_.
  (void)ctx_->onMemoryStream([](hipStream_t) { return hipSuccess; });
  for (void *ptr : {events_, bindings_, workspace_})
    if (ptr)
      (void)rt.hipFree(ptr);
  if (host_)
    (void)rt.hipHostFree(host_);
  for (hipEvent_t event : {start_, end_})
    if (event)
      (void)rt.hipEventDestroy(event);
  if (stream_)
    (void)rt.hipStreamDestroy(stream_);
  if (module_)
    (void)rt.hipModuleUnload(module_);
}

HipExecutor::~HipExecutor() {
  if (inFlight_)
    (void)synchronize();
  // A kernel still running (this one's or another program's on the same
  // device) would make every free below wait for it forever. Keep what it
  // may use alive until the process exits, library and context included.
  if (wedged_ || ctx_->wedged()) {
    new std::shared_ptr<HipContext>(ctx_);
    new std::shared_ptr<const DeviceArtifact>(artifact_);
    return;
  }
  release();
}

Status HipExecutor::streamLaunchSupport() const {
  return makeError(LOOMRT_ERROR_UNSUPPORTED, "program ", quoted(table_->name()),
                   " on ", ctx_->description(),
                   " cannot launch on a stream: the HIP backend's kernels "
                   "(kernels/amd) read their bindings from device memory the "
                   "runtime fills before each launch, and take their launch "
                   "number from it; use loomrt_launch and loomrt_synchronize");
}

Status HipExecutor::prepareQueuedLaunch() {
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  const HipRuntime &rt = ctx_->runtime();
  const std::string who = "program " + quoted(table_->name()) + " on " +
                          ctx_->description() + " cannot queue its launches";
  if (!rt.hipStreamWaitValue32)
    return makeError(LOOMRT_ERROR_UNSUPPORTED, who, ": the HIP runtime ",
                     quoted(rt.path), " has no hipStreamWaitValue32");
  // Program::setQueuedLaunch has waited for a launch in flight. Its stream
  // would never drain: a kernel that did not stop holds it.
  if (wedged_ || ctx_->wedged())
    return makeError(LOOMRT_ERROR_DEVICE, who, ": ", ctx_->description(),
                     " still runs a kernel that did not stop (",
                     ctx_->wedgedReason(), ")");
  // A wait the gate already satisfies: the runtime refuses stream memory
  // operations here, not in the middle of a launch.
  hipError_t r =
      rt.hipStreamWaitValue32(stream_, offsetPtr(hostDevice_, gateOffset_),
                              gatesOpened_, hipStreamWaitValueGte, ~0u);
  if (r == hipSuccess)
    r = rt.hipStreamSynchronize(stream_);
  if (r != hipSuccess)
    return makeError(LOOMRT_ERROR_UNSUPPORTED, who,
                     ": hipStreamWaitValue32 on mapped host memory failed: ",
                     hipErrorText(rt, r));
  return Status();
}

Status HipExecutor::launch(const LaunchParams &params) {
  if (inFlight_ || wedged_)
    return makeError(LOOMRT_ERROR_INTERNAL, "program ", quoted(table_->name()),
                     ": launch while its kernel is still running");
  // Its CUs are held by a kernel that never stopped: this kernel's blocks
  // could never all be resident.
  if (ctx_->wedged())
    return makeError(LOOMRT_ERROR_DEVICE, "program ", quoted(table_->name()),
                     " cannot launch: ", ctx_->description(),
                     " still runs a kernel that did not stop (",
                     ctx_->wedgedReason(), ")");
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  const HipRuntime &rt = ctx_->runtime();
  const LoomDeviceProgram &p = artifact_->program();
  epoch_ = params.epoch;
  watchdogMs_ = params.watchdogMs;
  // A refused launch does not fail the program: nothing ran.
  if (Status s = bindingChecker_.check(
          *table_, epoch_, params.bindings, ctx_->allocations(),
          [this](const void *ptr) { return unknownPointer(ptr); },
          "HIP runtime", ctx_->description());
      !s.ok())
    return s;
  timeoutCycles_ = timeoutCycles(watchdogMs_, ctx_->info());

  // The previous launch has ended (synchronize saw its stream idle), so the
  // mapped block and the staging copy are ours to rewrite.
  resetWorkerStatus(status_, numWorkers_);
  __atomic_store_n(abort_, 0, __ATOMIC_SEQ_CST);
  if (int32_t n = table_->numBuffers()) {
    std::copy(params.bindings, params.bindings + n, staging_);
    if (hipError_t r =
            rt.hipMemcpyAsync(bindings_, staging_, n * sizeof(LoomBinding),
                              hipMemcpyHostToDevice, stream_);
        r != hipSuccess)
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, what(),
                        ": cannot copy the bindings to the device");
  }

  LoomKernelArgs args{};
  args.bindings = static_cast<const LoomBinding *>(bindings_);
  args.workspace = workspace_;
  args.events = static_cast<unsigned long long *>(events_);
  args.epoch = epoch_;
  args.status = static_cast<LoomWorkerStatus *>(hostDevice_);
  args.abort_flag = reinterpret_cast<volatile int32_t *>(
      offsetPtr(hostDevice_, abortOffset_));
  args.timeout_cycles = timeoutCycles_;
  args.control = static_cast<unsigned long long *>(events_) +
                 controlCounterOffset(*table_);
  void *kernelParams[] = {&args};

  // Queued: the start event is reached only when the gate opens, after the
  // kernel and the end event are in the queue, so the host's submission is
  // not timed.
  if (params.queued)
    if (hipError_t r = rt.hipStreamWaitValue32(
            stream_, offsetPtr(hostDevice_, gateOffset_), gatesOpened_ + 1,
            hipStreamWaitValueGte, ~0u);
        r != hipSuccess)
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, what(),
                        ": cannot queue it behind its gate");
  hipError_t r = rt.hipEventRecord(start_, stream_);
  if (r == hipSuccess)
    r = rt.hipModuleLaunchCooperativeKernel(
        function_, static_cast<unsigned>(numWorkers_), 1, 1,
        static_cast<unsigned>(p.threads_per_block), 1, 1,
        static_cast<unsigned>(p.dynamic_smem_bytes), stream_, kernelParams);
  // Without the end event only this launch's time is lost; the launch
  // itself runs and must still be synchronized.
  timed_ = r == hipSuccess && rt.hipEventRecord(end_, stream_) == hipSuccess;
  // Opened whatever happened above: a gate left shut would hold the stream,
  // and everything later queued on it, forever.
  if (params.queued)
    __atomic_store_n(gate_, ++gatesOpened_, __ATOMIC_SEQ_CST);
  if (r == hipErrorCooperativeLaunchTooLarge)
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, what(), ": ", numWorkers_,
                      " blocks of ", p.threads_per_block,
                      " threads do not fit at once now (another process or a "
                      "CU mask holding CUs?)");
  if (r != hipSuccess)
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, "cannot start ", what(), " (",
                      numWorkers_, " blocks x ", p.threads_per_block,
                      " threads, ", p.dynamic_smem_bytes,
                      " bytes of dynamic shared memory)");
  inFlight_ = true;
  return Status();
}

void HipExecutor::raiseAbort() {
  // Coherent host memory: the store reaches the device's next poll.
  __atomic_store_n(abort_, 1, __ATOMIC_SEQ_CST);
}

std::vector<uint64_t> HipExecutor::readCounts() const {
  const size_t n = static_cast<size_t>(table_->numEvents());
  if (n == 0)
    return {};
  // A report must not hang: if the HIP runtime put the memory stream on the
  // same hardware queue as the kernel (it multiplexes streams once it runs
  // out of queues), the copy waits for a kernel that may never end. So the
  // copy goes to the program's own pinned block (a late copy lands there
  // harmlessly) and is waited for a bounded time.
  const HipRuntime &rt = ctx_->runtime();
  bool finished = false;
  if (ctx_->onMemoryStreamWithin(
          kReportCopyWait,
          [&](hipStream_t s) {
            return rt.hipMemcpyAsync(countsHost_, events_, n * sizeof(uint64_t),
                                     hipMemcpyDeviceToHost, s);
          },
          &finished) != hipSuccess ||
      !finished)
    return {};
  std::vector<uint64_t> counts(n);
  for (size_t e = 0; e < n; ++e)
    counts[e] = __atomic_load_n(&countsHost_[e], __ATOMIC_RELAXED);
  return counts;
}

std::string HipExecutor::unknownPointer(const void *ptr) const {
  const HipRuntime &rt = ctx_->runtime();
  if (!rt.hipPointerGetAttributes)
    return std::string(); // cannot tell: let it through
  union {
    HipPointerAttributes attributes;
    unsigned char bytes[256];
  } buffer{};
  if (hipError_t r = rt.hipPointerGetAttributes(&buffer.attributes, ptr);
      r != hipSuccess)
    return hipErrorText(rt, r);
  if (buffer.attributes.type == hipMemoryTypeUnregistered)
    return "unregistered host memory";
  return std::string();
}

WatchHooks HipExecutor::hooks() {
  const HipRuntime &rt = ctx_->runtime();
  WatchHooks h;
  h.busy = [this, &rt] {
    streamResult_ = rt.hipStreamQuery(stream_);
    return streamResult_ == hipErrorNotReady;
  };
  h.raiseAbort = [this] { raiseAbort(); };
  h.readCounts = [this] { return readCounts(); };
  h.bindings = &bindingChecker_.checked();
  return h;
}

Status HipExecutor::outcome(const LaunchWatch &w, const WatchHooks &hooks) {
  const HipRuntime &rt = ctx_->runtime();
  std::vector<LoomWorkerStatus> last;
  snapshotWorkerStatus(status_, numWorkers_, &last);

  if (w.stillRunning) {
    std::string why;
    Status s = wedgedLaunchStatus(*table_, last, epoch_, w, watchdogMs_,
                                  ctx_->description(), what(), hooks, &why);
    ctx_->markWedged(why);
    wedged_ = true;
    return s;
  }
  if (streamResult_ != hipSuccess)
    return failedLaunchStatus(
        HipContext::codeFor(LOOMRT_ERROR_DEVICE, streamResult_), *table_, last,
        ctx_->description(), what(), hipErrorText(rt, streamResult_),
        isStickyHipError(streamResult_), hooks);
  Status s = endedLaunchStatus(*table_, last, epoch_, w, timeoutCycles_, hooks);
  if (s.ok()) {
    float ms = 0;
    if (timed_ && rt.hipEventElapsedTime(&ms, start_, end_) == hipSuccess)
      lastLaunchNs_ = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
  }
  return s;
}

Status HipExecutor::synchronize() {
  if (!inFlight_)
    return Status();
  // Whatever happens below, this launch is over for the core.
  inFlight_ = false;
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  WatchHooks h = hooks();
  return outcome(watchLaunch(*table_, status_, epoch_, watchdogMs_, h), h);
}

uint64_t HipExecutor::eventCount(int32_t event) const {
  uint64_t value = std::numeric_limits<uint64_t>::max();
  // Behind a kernel that never stops, the copy might never run.
  if (wedged_ || ctx_->wedged() || !ctx_->makeCurrent().ok())
    return value;
  const HipRuntime &rt = ctx_->runtime();
  const void *at = offsetPtr(events_, static_cast<size_t>(event) *
                                          sizeof(unsigned long long));
  // The memory stream does not wait for the kernel: counts can be read
  // while a launch runs (e.g. to watch a slow one), unless the HIP runtime
  // multiplexed it onto the kernel's hardware queue; then this waits for
  // the kernel to end.
  if (ctx_->onMemoryStream([&](hipStream_t s) {
        return rt.hipMemcpyAsync(&value, at, sizeof(value),
                                 hipMemcpyDeviceToHost, s);
      }) != hipSuccess)
    return std::numeric_limits<uint64_t>::max();
  return value;
}

} // namespace hip
} // namespace rt
} // namespace loom
