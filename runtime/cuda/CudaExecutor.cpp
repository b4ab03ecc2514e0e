//===- CudaExecutor.cpp - Running a program as one CUDA kernel ------------===//

#include "runtime/cuda/CudaExecutor.h"

#include "runtime/cuda/CudaChecks.h"
#include "runtime/src/Binding.h"
#include "runtime/src/DeviceWatchdog.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <sstream>

namespace loom {
namespace rt {
namespace cuda {

namespace {

size_t roundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

} // namespace

Status CudaExecutor::create(std::shared_ptr<CudaContext> context,
                            std::shared_ptr<const ProgramTable> table,
                            std::shared_ptr<const DeviceArtifact> artifact,
                            std::unique_ptr<Executable> *out) {
  std::unique_ptr<CudaExecutor> executor(new CudaExecutor(
      std::move(context), std::move(table), std::move(artifact)));
  // On failure the destructor frees whatever load() got.
  if (Status s = executor->load(); !s.ok())
    return s;
  *out = std::move(executor);
  return Status();
}

CudaExecutor::CudaExecutor(std::shared_ptr<CudaContext> context,
                           std::shared_ptr<const ProgramTable> table,
                           std::shared_ptr<const DeviceArtifact> artifact)
    : ctx_(std::move(context)), table_(std::move(table)),
      artifact_(std::move(artifact)), numWorkers_(table_->numWorkers()),
      inlineBindings_(artifact_->program().flags & LOOM_DEVICE_INLINE_BINDINGS),
      byValue_(inlineBindings_ ? std::max<size_t>(1, table_->numBuffers())
                               : 0) {}

std::string CudaExecutor::what() const {
  return "kernel " + quoted(artifact_->program().kernel_name) + " of program " +
         quoted(table_->name()) + " " + launchName(epoch_);
}

Status CudaExecutor::load() {
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  if (Status s = loadKernel(); !s.ok())
    return s;
  return allocate();
}

Status CudaExecutor::loadKernel() {
  const CudaDriver &d = ctx_->driver();
  const LoomDeviceProgram &p = artifact_->program();
  const std::string &path = artifact_->path();
  const CudaDeviceInfo &info = ctx_->info();

  if (CUresult r = d.cuModuleLoadData(&module_, p.code_object);
      r != CUDA_SUCCESS) {
    module_ = nullptr;
    return ctx_->fail(LOOMRT_ERROR_LOAD_FAILED, r,
                      "cannot load the code object of " + quoted(path) + " (" +
                          p.arch + ", " + std::to_string(p.code_object_size) +
                          " bytes)");
  }
  if (CUresult r = d.cuModuleGetFunction(&function_, module_, p.kernel_name);
      r != CUDA_SUCCESS) {
    function_ = nullptr;
    if (r == CUDA_ERROR_NOT_FOUND)
      return makeError(LOOMRT_ERROR_LOAD_FAILED, "cuda program ", quoted(path),
                       ": its code object has no kernel named ",
                       quoted(p.kernel_name),
                       " (kernel_name must be the extern \"C\" symbol)");
    return ctx_->fail(LOOMRT_ERROR_LOAD_FAILED, r,
                      "cannot find kernel " + quoted(p.kernel_name) + " in " +
                          quoted(path));
  }
  // Above 48 KiB a kernel must opt in to its dynamic shared memory.
  if (p.dynamic_smem_bytes > kDefaultDynamicSmemLimit)
    if (CUresult r = d.cuFuncSetAttribute(
            function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            p.dynamic_smem_bytes);
        r != CUDA_SUCCESS)
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r,
                        "kernel " + quoted(p.kernel_name) + " cannot get " +
                            std::to_string(p.dynamic_smem_bytes) +
                            " bytes of dynamic shared memory");

  // Parameters past 4 KiB need CUDA 12.1 (DeviceAbi.h); an older driver
  // would refuse every launch.
  const size_t paramBytes =
      inlineBindings_ ? LOOM_INLINE_BINDINGS_PARAM_BYTES(table_->numBuffers())
                      : sizeof(LoomKernelArgs);
  if (paramBytes > LOOM_KERNEL_PARAM_BYTES_BEFORE_12_1 && d.version < 12010)
    return makeError(LOOMRT_ERROR_UNSUPPORTED, "kernel ", quoted(p.kernel_name),
                     " of ", quoted(path), " takes ", paramBytes,
                     " bytes of parameters (its bindings by value), which "
                     "needs a CUDA 12.1 driver or newer; ",
                     ctx_->description(), " has driver version ", d.version);

  BlockShape shape{numWorkers_, p.threads_per_block, p.dynamic_smem_bytes};
  int blocksPerSm = 0;
  if (CUresult r = d.cuOccupancyMaxActiveBlocksPerMultiprocessor(
          &blocksPerSm, function_, p.threads_per_block,
          static_cast<size_t>(p.dynamic_smem_bytes));
      r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r,
                      "cannot compute the occupancy of kernel " +
                          quoted(p.kernel_name));
  // Only to explain a refusal; optional.
  int registers = -1;
  if (!d.cuFuncGetAttribute ||
      d.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function_) !=
          CUDA_SUCCESS)
    registers = -1;
  if (Status s =
          checkCoResidency(table_->name(), shape, blocksPerSm, registers, info);
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

Status CudaExecutor::allocate() {
  const CudaDriver &d = ctx_->driver();
  const CudaDeviceInfo &info = ctx_->info();
  const std::string who = "program " + quoted(table_->name());
  if (!info.canMapHostMemory)
    return makeError(LOOMRT_ERROR_RESOURCES, ctx_->description(),
                     " cannot map host memory, which the watchdog needs to "
                     "see the workers' status while ",
                     who, " runs");

  if (CUresult r = d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
      r != CUDA_SUCCESS) {
    stream_ = nullptr;
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, who,
                      ": cannot create its stream");
  }
  for (CUevent *event : {&start_, &end_})
    if (CUresult r = d.cuEventCreate(event, CU_EVENT_DEFAULT);
        r != CUDA_SUCCESS) {
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
      inlineBindings_
          ? 0
          : std::max<size_t>(1, table_->numBuffers()) * sizeof(LoomBinding);
  const int64_t workspaceBytes = table_->desc().workspace_bytes;
  const size_t profileBytes =
      (artifact_->program().flags & LOOM_DEVICE_PROFILED)
          ? static_cast<size_t>(table_->numTasks() + numWorkers_) *
                sizeof(LoomTaskTiming)
          : 0;
  struct {
    CUdeviceptr *ptr;
    size_t bytes;
    const char *what;
  } arrays[] = {
      {&events_, eventBytes, "event counters"},
      {&bindings_, bindingBytes, "bindings"},
      {&workspace_, static_cast<size_t>(workspaceBytes), "workspace"},
      {&profile_, profileBytes, "per-task timing records"},
  };
  for (auto &a : arrays) {
    if (a.bytes == 0)
      continue;
    if (CUresult r = d.cuMemAlloc(a.ptr, a.bytes); r != CUDA_SUCCESS) {
      *a.ptr = 0;
      return ctx_->fail(LOOMRT_ERROR_OUT_OF_MEMORY, r, who,
                        ": cannot allocate its ", a.bytes, "-byte ", a.what);
    }
  }

  // One pinned block the device reaches through the mapping: status records,
  // then the abort flag and the launch gate on cache lines of their own, then
  // the bindings' staging (as large as their device copy).
  const size_t statusBytes =
      static_cast<size_t>(numWorkers_) * sizeof(LoomWorkerStatus);
  abortOffset_ = roundUp(statusBytes, 128);
  gateOffset_ = abortOffset_ + 128;
  const size_t stagingOffset = gateOffset_ + 128;
  const size_t hostBytes = stagingOffset + bindingBytes;
  if (CUresult r = d.cuMemHostAlloc(
          &host_, hostBytes, kMemHostAllocDeviceMap | kMemHostAllocPortable);
      r != CUDA_SUCCESS) {
    host_ = nullptr;
    return ctx_->fail(LOOMRT_ERROR_OUT_OF_MEMORY, r, who, ": cannot allocate ",
                      hostBytes, " bytes of mapped host memory");
  }
  if (CUresult r = d.cuMemHostGetDevicePointer(&hostDevice_, host_, 0);
      r != CUDA_SUCCESS) {
    // With unified addressing every pinned allocation is mapped at its
    // host address, whatever the context's flags say.
    if (!info.unifiedAddressing)
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, who,
                        ": cannot map its status memory into the device");
    hostDevice_ = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(host_));
  }
  auto *bytes = static_cast<unsigned char *>(host_);
  std::memset(bytes, 0, hostBytes);
  status_ = reinterpret_cast<volatile LoomWorkerStatus *>(bytes);
  abort_ = reinterpret_cast<volatile int32_t *>(bytes + abortOffset_);
  gate_ = reinterpret_cast<volatile uint32_t *>(bytes + gateOffset_);
  staging_ = reinterpret_cast<LoomBinding *>(bytes + stagingOffset);
  resetWorkerStatus(status_, numWorkers_);

  // Zeroed once. Launch e waits for e * needs and takes tickets from
  // (e - 1) * (num_tasks + num_workers), so no launch resets them.
  // The timing records too: one the kernel never wrote then reads as
  // launch 0, which Program::profile reports.
  CUresult r = d.cuMemsetD8Async(events_, 0, eventBytes, stream_);
  if (r == CUDA_SUCCESS && profile_)
    r = d.cuMemsetD8Async(profile_, 0, profileBytes, stream_);
  if (r == CUDA_SUCCESS)
    r = d.cuStreamSynchronize(stream_);
  if (r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, who,
                      ": cannot zero its event counters");
  return Status();
}

void CudaExecutor::release() {
  const CudaDriver &d = ctx_->driver();
  if (!ctx_->makeCurrent().ok())
    return;
  if (stream_)
    (void)d.cuStreamSynchronize(stream_);
  for (CUdeviceptr ptr : {events_, bindings_, workspace_, profile_})
    if (ptr)
      (void)d.cuMemFree(ptr);
  if (host_)
    (void)d.cuMemFreeHost(host_);
  for (CUevent event : {start_, end_})
    if (event)
      (void)d.cuEventDestroy(event);
  if (stream_)
    (void)d.cuStreamDestroy(stream_);
  if (module_)
    (void)d.cuModuleUnload(module_);
}

CudaExecutor::~CudaExecutor() {
  if (inFlight_)
    (void)synchronize();
  // A kernel still running (this one's or another program's on the same
  // device) would make every free below wait for it forever. Keep what it
  // may use alive until the process exits, library and context included.
  if (wedged_ || ctx_->wedged()) {
    new std::shared_ptr<CudaContext>(ctx_);
    new std::shared_ptr<const DeviceArtifact>(artifact_);
    return;
  }
  release();
}

std::string CudaExecutor::unknownPointer(const void *ptr) const {
  const CudaDriver &d = ctx_->driver();
  if (!d.cuPointerGetAttribute)
    return std::string(); // cannot tell: let it through
  unsigned memoryType = 0;
  if (CUresult r = d.cuPointerGetAttribute(
          &memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
          static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr)));
      r != CUDA_SUCCESS)
    return cudaErrorText(d, r);
  return std::string();
}

Status CudaExecutor::prepareQueuedLaunch() {
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  const CudaDriver &d = ctx_->driver();
  const std::string who = "program " + quoted(table_->name()) + " on " +
                          ctx_->description() + " cannot queue its launches";
  if (!d.cuStreamWaitValue32)
    return makeError(LOOMRT_ERROR_UNSUPPORTED, who, ": the driver ",
                     quoted(d.path), " has no cuStreamWaitValue32");
  // Program::setQueuedLaunch has waited for a launch in flight. Its stream
  // would never drain: a kernel that did not stop holds it.
  if (wedged_ || ctx_->wedged())
    return makeError(LOOMRT_ERROR_DEVICE, who, ": ", ctx_->description(),
                     " still runs a kernel that did not stop (",
                     ctx_->wedgedReason(), ")");
  // A wait the gate already satisfies: the driver refuses stream memory
  // operations here, not in the middle of a launch.
  CUresult r = d.cuStreamWaitValue32(stream_, hostDevice_ + gateOffset_,
                                     gatesOpened_, CU_STREAM_WAIT_VALUE_GEQ);
  if (r == CUDA_SUCCESS)
    r = d.cuStreamSynchronize(stream_);
  if (r != CUDA_SUCCESS)
    return makeError(LOOMRT_ERROR_UNSUPPORTED, who,
                     ": cuStreamWaitValue32 on mapped host memory failed: ",
                     cudaErrorText(d, r));
  return Status();
}

Status CudaExecutor::readyToLaunch() const {
  // Its SMs are held by a kernel that never stopped: this kernel's blocks
  // could never all be resident.
  if (ctx_->wedged())
    return makeError(LOOMRT_ERROR_DEVICE, "program ", quoted(table_->name()),
                     " cannot launch: ", ctx_->description(),
                     " still runs a kernel that did not stop (",
                     ctx_->wedgedReason(), ")");
  return ctx_->makeCurrent();
}

Status CudaExecutor::checkBindings(const LoomBinding *bindings) {
  return bindingChecker_.check(
      *table_, epoch_, bindings, ctx_->allocations(),
      [this](const void *ptr) { return unknownPointer(ptr); }, "CUDA driver",
      ctx_->description());
}

void CudaExecutor::clearStatus() {
  resetWorkerStatus(status_, numWorkers_);
  *abort_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

LoomKernelArgs CudaExecutor::kernelArgs(uint64_t epoch) const {
  LoomKernelArgs args{};
  // Null: the kernel reads its second parameter (DeviceAbi.h, version 4).
  args.bindings = inlineBindings_
                      ? nullptr
                      : reinterpret_cast<const LoomBinding *>(bindings_);
  args.workspace = reinterpret_cast<void *>(workspace_);
  args.events = reinterpret_cast<unsigned long long *>(events_);
  args.epoch = epoch;
  args.status = reinterpret_cast<LoomWorkerStatus *>(hostDevice_);
  args.abort_flag =
      reinterpret_cast<volatile int32_t *>(hostDevice_ + abortOffset_);
  args.timeout_cycles = timeoutCycles_;
  args.profile = reinterpret_cast<LoomTaskTiming *>(profile_);
  args.control = reinterpret_cast<unsigned long long *>(controlAddress());
  return args;
}

CUdeviceptr CudaExecutor::controlAddress() const {
  return events_ + static_cast<CUdeviceptr>(controlCounterOffset(*table_) *
                                            sizeof(unsigned long long));
}

CUresult CudaExecutor::enqueue(CUstream stream, LoomKernelArgs *args,
                               const LoomBinding *bindings) {
  const LoomDeviceProgram &p = artifact_->program();
  void *kernelParams[] = {args, nullptr};
  if (inlineBindings_) {
    std::copy(bindings, bindings + table_->numBuffers(), byValue_.begin());
    kernelParams[1] = byValue_.data();
  }
  return ctx_->driver().cuLaunchCooperativeKernel(
      function_, static_cast<unsigned>(numWorkers_), 1, 1,
      static_cast<unsigned>(p.threads_per_block), 1, 1,
      static_cast<unsigned>(p.dynamic_smem_bytes), stream, kernelParams);
}

Status CudaExecutor::launchError(CUresult r, const std::string &what) const {
  const LoomDeviceProgram &p = artifact_->program();
  if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
    return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, what, ": ", numWorkers_,
                      " blocks of ", p.threads_per_block,
                      " threads do not fit at once now (another process or "
                      "MPS limit holding SMs?)");
  return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, "cannot start ", what, " (",
                    numWorkers_, " blocks x ", p.threads_per_block,
                    " threads, ", p.dynamic_smem_bytes,
                    " bytes of dynamic shared memory)");
}

Status CudaExecutor::launch(const LaunchParams &params) {
  if (inFlight_ || wedged_)
    return makeError(LOOMRT_ERROR_INTERNAL, "program ", quoted(table_->name()),
                     ": launch while its kernel is still running");
  if (Status s = readyToLaunch(); !s.ok())
    return s;
  const CudaDriver &d = ctx_->driver();
  epoch_ = params.epoch;
  watchdogMs_ = params.watchdogMs;
  if (Status s = checkBindings(params.bindings); !s.ok())
    return s;
  timeoutCycles_ = deviceTimeoutCycles(watchdogMs_, ctx_->info().clockKHz);

  // The previous launch has ended (synchronize saw its stream idle), so the
  // mapped block and the staging copy are ours to rewrite.
  clearStatus();
  if (int32_t n = table_->numBuffers(); n && !inlineBindings_) {
    std::copy(params.bindings, params.bindings + n, staging_);
    if (CUresult r = d.cuMemcpyHtoDAsync(bindings_, staging_,
                                         n * sizeof(LoomBinding), stream_);
        r != CUDA_SUCCESS)
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, what(),
                        ": cannot copy the bindings to the device");
  }
  LoomKernelArgs args = kernelArgs(params.numberedOnDevice ? 0 : epoch_);

  // Queued: the start event is reached only when the gate opens, after the
  // kernel and the end event are in the queue, so the host's submission is
  // not timed.
  if (params.queued)
    if (CUresult r =
            d.cuStreamWaitValue32(stream_, hostDevice_ + gateOffset_,
                                  gatesOpened_ + 1, CU_STREAM_WAIT_VALUE_GEQ);
        r != CUDA_SUCCESS)
      return ctx_->fail(LOOMRT_ERROR_RESOURCES, r, what(),
                        ": cannot queue it behind its gate");
  CUresult r = d.cuEventRecord(start_, stream_);
  if (r == CUDA_SUCCESS)
    r = enqueue(stream_, &args, params.bindings);
  // Without the end event only this launch's time is lost; the launch
  // itself runs and must still be synchronized.
  timed_ = r == CUDA_SUCCESS && d.cuEventRecord(end_, stream_) == CUDA_SUCCESS;
  // Opened whatever happened above: a gate left shut would hold the stream,
  // and everything later queued on it, forever.
  if (params.queued)
    __atomic_store_n(gate_, ++gatesOpened_, __ATOMIC_SEQ_CST);
  if (r != CUDA_SUCCESS)
    return launchError(r, what());
  inFlight_ = true;
  return Status();
}

//--- Launches on the caller's stream ----------------------------------------//

Status CudaExecutor::streamLaunchSupport() const {
  if (inlineBindings_)
    return Status();
  const LoomDeviceProgram &p = artifact_->program();
  const int32_t n = table_->numBuffers();
  std::string why;
  if (p.abi_version < 4)
    why = "it was built for device ABI version " +
          std::to_string(p.abi_version) +
          ", whose kernels read their bindings from device memory the "
          "runtime fills before each launch (rebuild it with a newer loomc)";
  else if (!LOOM_INLINE_BINDINGS_FIT(n))
    why = "its kernel reads its bindings from device memory the runtime "
          "fills before each launch: those of its " +
          std::to_string(n) + " buffers and its LoomKernelArgs would be " +
          std::to_string(LOOM_INLINE_BINDINGS_PARAM_BYTES(n)) +
          " bytes of kernel parameters, more than the " +
          std::to_string(LOOM_KERNEL_PARAM_BYTES) + " a kernel may take";
  else
    why = "its kernel reads its bindings from device memory the runtime "
          "fills before each launch (its flags lack "
          "LOOM_DEVICE_INLINE_BINDINGS)";
  return makeError(LOOMRT_ERROR_UNSUPPORTED, "program ", quoted(table_->name()),
                   " (", quoted(artifact_->path()),
                   ") cannot launch on a stream: ", why);
}

bool CudaExecutor::capturing(void *stream) const {
  const CudaDriver &d = ctx_->driver();
  int status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!d.cuStreamIsCapturing ||
      d.cuStreamIsCapturing(static_cast<CUstream>(stream), &status) !=
          CUDA_SUCCESS)
    return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

Status CudaExecutor::beginStreamLaunches(uint64_t completed, void *stream) {
  if (Status s = readyToLaunch(); !s.ok())
    return s;
  const std::string who = "program " + quoted(table_->name());
  // A store captured into a graph would run again at every replay and set
  // the count back each time.
  if (capturing(stream))
    return makeError(
        LOOMRT_ERROR_INVALID_ARGUMENT, who,
        ": its first launch on a stream after loomrt_launch cannot be "
        "captured into a CUDA graph: it first stores the launches so far (",
        completed,
        ") in the kernel's control words, a synchronous copy that a capture "
        "must not contain. Launch it on the stream once before capturing");
  std::vector<unsigned long long> words(LOOM_CONTROL_WORKERS + numWorkers_, 0);
  std::fill(words.begin() + LOOM_CONTROL_WORKERS, words.end(), completed);
  const CudaDriver &d = ctx_->driver();
  if (CUresult r = ctx_->onMemoryStream([&](CUstream s) {
        return d.cuMemcpyHtoDAsync(controlAddress(), words.data(),
                                   words.size() * sizeof(words[0]), s);
      });
      r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_DEVICE, r, who,
                      ": cannot store its launch count in its control words");
  // The host's launches may leave records and a raised flag (one raised as
  // the last task ended is still a success); nothing resets them between
  // launches on a stream.
  clearStatus();
  return Status();
}

Status CudaExecutor::launchOnStream(const LaunchParams &params, void *stream,
                                    bool *captured) {
  *captured = false;
  if (Status s = readyToLaunch(); !s.ok())
    return s;
  epoch_ = 0;
  if (Status s = checkBindings(params.bindings); !s.ok())
    return s;
  timeoutCycles_ =
      deviceTimeoutCycles(params.watchdogMs, ctx_->info().clockKHz);
  *captured = capturing(stream);
  LoomKernelArgs args = kernelArgs(0);
  if (CUresult r =
          enqueue(static_cast<CUstream>(stream), &args, params.bindings);
      r != CUDA_SUCCESS) {
    *captured = false;
    std::ostringstream on;
    on << what() << " (stream " << stream << ")";
    return launchError(r, on.str());
  }
  return Status();
}

Status CudaExecutor::readControl(std::vector<unsigned long long> *words) const {
  const CudaDriver &d = ctx_->driver();
  words->assign(LOOM_CONTROL_WORKERS + numWorkers_, 0);
  if (CUresult r = ctx_->onMemoryStream([&](CUstream s) {
        return d.cuMemcpyDtoHAsync(words->data(), controlAddress(),
                                   words->size() * sizeof((*words)[0]), s);
      });
      r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_DEVICE, r, "program ",
                      quoted(table_->name()),
                      ": cannot read the control words of its launches on "
                      "a stream");
  return Status();
}

Status CudaExecutor::resetCounters() {
  const CudaDriver &d = ctx_->driver();
  const size_t bytes = deviceCounterCount(*table_) * sizeof(unsigned long long);
  if (CUresult r = ctx_->onMemoryStream(
          [&](CUstream s) { return d.cuMemsetD8Async(events_, 0, bytes, s); });
      r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_DEVICE, r, "program ",
                      quoted(table_->name()),
                      ": cannot zero its event counters after a failed "
                      "launch on a stream");
  clearStatus();
  return Status();
}

Status CudaExecutor::checkStreamLaunches(uint64_t atLeast, StreamCheck *out) {
  *out = StreamCheck();
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  std::vector<unsigned long long> control;
  if (Status s = readControl(&control); !s.ok())
    return s;
  std::vector<LoomWorkerStatus> last;
  snapshotWorkerStatus(status_, numWorkers_, &last);
  const auto counts = control.begin() + LOOM_CONTROL_WORKERS;
  const uint64_t lo = *std::min_element(counts, control.end());
  const uint64_t hi = *std::max_element(counts, control.end());
  const std::string who =
      "program " + quoted(table_->name()) + " on " + ctx_->description();

  if (control[LOOM_CONTROL_FAILED] != 0 || anyWorkerLeft(last)) {
    // Every worker of the failed launch stored its number as it left;
    // later launches did nothing.
    epoch_ = hi;
    WatchHooks hooks;
    hooks.readCounts = [this] { return readCounts(); };
    hooks.bindings = &bindingChecker_.checked();
    Status failure = endedLaunchStatus(*table_, last, epoch_, LaunchWatch(),
                                       timeoutCycles_, hooks);
    if (failure.ok())
      failure = makeError(LOOMRT_ERROR_INTERNAL, "program ",
                          quoted(table_->name()), " launch ", epoch_,
                          " failed on the device (its failure word is set), "
                          "but no worker recorded why");
    epoch_ = 0;
    if (Status s = resetCounters(); !s.ok())
      return s;
    out->reset = true;
    return makeError(failure.code(), failure.message(), "\n  (", who,
                     ", a launch on a stream: its counters are reset, so its "
                     "next launch is launch 1)");
  }
  if (lo != hi)
    return makeError(LOOMRT_ERROR_NOT_READY, who,
                     ": its workers have completed between ", lo, " and ", hi,
                     " launches: a launch on a stream is still running "
                     "(synchronize the stream before checking)");
  if (lo < atLeast)
    return makeError(LOOMRT_ERROR_NOT_READY, who, ": ", lo,
                     " launches have completed of at least ", atLeast,
                     " queued: launches on a stream are still waiting or "
                     "running (synchronize the stream before checking)");
  out->completed = lo;
  return Status();
}

std::vector<uint64_t> CudaExecutor::readCounts() const {
  std::vector<uint64_t> counts(static_cast<size_t>(table_->numEvents()));
  if (counts.empty())
    return counts;
  const CudaDriver &d = ctx_->driver();
  if (ctx_->onMemoryStream([&](CUstream s) {
        return d.cuMemcpyDtoHAsync(counts.data(), events_,
                                   counts.size() * sizeof(uint64_t), s);
      }) != CUDA_SUCCESS)
    counts.clear();
  return counts;
}

void CudaExecutor::raiseAbort() {
  *abort_ = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

WatchHooks CudaExecutor::hooks() {
  const CudaDriver &d = ctx_->driver();
  WatchHooks h;
  h.busy = [this, &d] {
    streamResult_ = d.cuStreamQuery(stream_);
    return streamResult_ == CUDA_ERROR_NOT_READY;
  };
  h.raiseAbort = [this] { raiseAbort(); };
  h.readCounts = [this] { return readCounts(); };
  h.bindings = &bindingChecker_.checked();
  return h;
}

Status CudaExecutor::outcome(const LaunchWatch &w, const WatchHooks &hooks) {
  const CudaDriver &d = ctx_->driver();
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
  if (streamResult_ != CUDA_SUCCESS)
    return failedLaunchStatus(
        CudaContext::codeFor(LOOMRT_ERROR_DEVICE, streamResult_), *table_,
        last, ctx_->description(), what(), cudaErrorText(d, streamResult_),
        isStickyCudaError(streamResult_), hooks);
  Status s = endedLaunchStatus(*table_, last, epoch_, w, timeoutCycles_, hooks);
  if (s.ok()) {
    // A flag raised as the last task ended would stop the next launch on a
    // stream, which nothing clears it before.
    *abort_ = 0;
    float ms = 0;
    if (timed_ && d.cuEventElapsedTime(&ms, start_, end_) == CUDA_SUCCESS)
      lastLaunchNs_ = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
  }
  return s;
}

Status CudaExecutor::synchronize() {
  if (!inFlight_)
    return Status();
  // Whatever happens below, this launch is over for the core.
  inFlight_ = false;
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  WatchHooks h = hooks();
  return outcome(watchLaunch(*table_, status_, epoch_, watchdogMs_, h), h);
}

Status CudaExecutor::readProfile(std::vector<LoomTaskTiming> *records,
                                 double *nsPerTick) const {
  if (Status s = ctx_->makeCurrent(); !s.ok())
    return s;
  const CudaDriver &d = ctx_->driver();
  records->assign(static_cast<size_t>(table_->numTasks() + numWorkers_),
                  LoomTaskTiming{});
  // The launch has ended (the core asks only between launches).
  if (CUresult r = ctx_->onMemoryStream([&](CUstream s) {
        return d.cuMemcpyDtoHAsync(records->data(), profile_,
                                   records->size() * sizeof(LoomTaskTiming),
                                   s);
      });
      r != CUDA_SUCCESS)
    return ctx_->fail(LOOMRT_ERROR_DEVICE, r, "program ",
                      quoted(table_->name()),
                      ": cannot read its per-task timing records");
  *nsPerTick = 1; // %globaltimer counts nanoseconds
  return Status();
}

uint64_t CudaExecutor::eventCount(int32_t event) const {
  uint64_t value = std::numeric_limits<uint64_t>::max();
  if (!ctx_->makeCurrent().ok())
    return value;
  const CudaDriver &d = ctx_->driver();
  CUdeviceptr at = events_ + static_cast<CUdeviceptr>(event) * sizeof(uint64_t);
  // The memory stream does not wait for the kernel: counts can be read
  // while a launch runs (e.g. to watch a slow one).
  if (ctx_->onMemoryStream([&](CUstream s) {
        return d.cuMemcpyDtoHAsync(&value, at, sizeof(value), s);
      }) != CUDA_SUCCESS)
    return std::numeric_limits<uint64_t>::max();
  return value;
}

} // namespace cuda
} // namespace rt
} // namespace loom
