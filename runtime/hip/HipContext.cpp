//===- HipContext.cpp - One HIP device as the backend holds it ------------===//

#include "runtime/hip/HipContext.h"

#include <cstring>

namespace loom {
namespace rt {
namespace hip {

namespace {

/// hipGetDevicePropertiesR0600 writes the struct its library was built
/// with; room to spare in case a later one is larger than ours.
union PropsBuffer {
  HipDeviceProp props;
  unsigned char bytes[8192];
};

std::string versionText(const HipRuntime &runtime) {
  return runtime.version
             ? ", HIP runtime version " + std::to_string(runtime.version)
             : std::string();
}

} // namespace

Status initHip(const HipRuntime **runtimeOut, int *count) {
  *count = 0;
  const HipRuntime *runtime = nullptr;
  if (Status s = loadHipRuntime(&runtime); !s.ok())
    return s;
  *runtimeOut = runtime;
  // A runtime without a usable GPU says so here; that is "no devices", not
  // a broken backend.
  hipError_t r = runtime->hipInit(0);
  if (r == hipErrorNoDevice)
    return Status();
  if (r != hipSuccess)
    return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "hip: hipInit failed (",
                     runtime->path, versionText(*runtime),
                     "): ", hipErrorText(*runtime, r));
  r = runtime->hipGetDeviceCount(count);
  if (r == hipErrorNoDevice) {
    *count = 0;
    return Status();
  }
  if (r != hipSuccess) {
    *count = 0;
    return makeError(
        LOOMRT_ERROR_BACKEND_UNAVAILABLE,
        "hip: hipGetDeviceCount failed: ", hipErrorText(*runtime, r));
  }
  return Status();
}

loomrt_status HipContext::codeFor(loomrt_status code, hipError_t result) {
  if (result == hipErrorOutOfMemory)
    return LOOMRT_ERROR_OUT_OF_MEMORY;
  if (isStickyHipError(result))
    return LOOMRT_ERROR_DEVICE;
  return code;
}

Status HipContext::open(const HipRuntime &runtime, int ordinal, int count,
                        std::shared_ptr<HipContext> *out) {
  if (ordinal < 0 || ordinal >= count)
    return makeError(LOOMRT_ERROR_UNKNOWN_DEVICE, "hip device ordinal ",
                     ordinal, " out of range: ",
                     count == 0
                         ? std::string("the HIP runtime sees no devices")
                         : "there " + std::string(count == 1 ? "is " : "are ") +
                               std::to_string(count) + " (0 to " +
                               std::to_string(count - 1) + ")");
  auto runtimeError = [&](const char *what, hipError_t r) {
    return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "hip device ", ordinal,
                     ": ", what, " failed: ", hipErrorText(runtime, r));
  };
  if (hipError_t r = runtime.hipSetDevice(ordinal); r != hipSuccess)
    return runtimeError("hipSetDevice", r);

  HipDeviceInfo info;
  info.ordinal = ordinal;
  int maxSharedOptin = 0;
  struct {
    int attribute;
    int *value;
  } attributes[] = {
      {hipDeviceAttributeMultiprocessorCount, &info.cuCount},
      {hipDeviceAttributeMaxThreadsPerBlock, &info.maxThreadsPerBlock},
      {hipDeviceAttributeMaxSharedMemoryPerBlock, &info.maxSharedPerBlock},
      {hipDeviceAttributeClockRate, &info.clockKHz},
  };
  for (auto &a : attributes)
    if (hipError_t r =
            runtime.hipDeviceGetAttribute(a.value, a.attribute, ordinal);
        r != hipSuccess)
      return runtimeError("hipDeviceGetAttribute", r);
  auto flag = [&](int attribute) {
    int value = 0;
    return runtime.hipDeviceGetAttribute(&value, attribute, ordinal) ==
               hipSuccess &&
           value;
  };
  info.cooperativeLaunch = flag(hipDeviceAttributeCooperativeLaunch);
  info.unifiedAddressing = flag(hipDeviceAttributeUnifiedAddressing);
  info.canMapHostMemory = flag(hipDeviceAttributeCanMapHostMemory);
  // AMD needs no opt-in for large LDS; take whichever limit is larger.
  if (runtime.hipDeviceGetAttribute(&maxSharedOptin,
                                    hipDeviceAttributeSharedMemPerBlockOptin,
                                    ordinal) == hipSuccess &&
      maxSharedOptin > info.maxSharedPerBlock)
    info.maxSharedPerBlock = maxSharedOptin;
  if (runtime.hipDeviceGetAttribute(&info.clockInstructionKHz,
                                    hipDeviceAttributeClockInstructionRate,
                                    ordinal) != hipSuccess)
    info.clockInstructionKHz = 0;

  // The name and the architecture exist only in hipDeviceProp_t. Its layout
  // is checked against what hipDeviceGetAttribute said.
  auto buffer = std::make_unique<PropsBuffer>();
  std::memset(buffer.get(), 0, sizeof(PropsBuffer));
  if (hipError_t r =
          runtime.hipGetDevicePropertiesR0600(&buffer->props, ordinal);
      r != hipSuccess)
    return runtimeError("hipGetDevicePropertiesR0600", r);
  const HipDeviceProp &props = buffer->props;
  const bool named = std::memchr(props.name, 0, sizeof(props.name)) != nullptr;
  const bool archNamed =
      std::memchr(props.gcnArchName, 0, sizeof(props.gcnArchName)) != nullptr;
  if (!named || !archNamed || props.multiProcessorCount != info.cuCount ||
      std::strncmp(props.gcnArchName, "gfx", 3) != 0)
    return makeError(
        LOOMRT_ERROR_BACKEND_UNAVAILABLE, "hip device ", ordinal,
        ": hipGetDevicePropertiesR0600 of ", runtime.path, versionText(runtime),
        " does not have the hipDeviceProp_tR0600 layout of ROCm 6/7 "
        "(multiProcessorCount ",
        props.multiProcessorCount, " where hipDeviceGetAttribute says ",
        info.cuCount, "; gcnArchName ",
        archNamed ? quoted(props.gcnArchName) : std::string("unterminated"),
        ")");
  info.name = props.name;
  info.gcnArchName = props.gcnArchName;

  std::shared_ptr<HipContext> context(new HipContext(runtime, std::move(info)));
  if (hipError_t r = runtime.hipStreamCreateWithFlags(&context->memoryStream_,
                                                      hipStreamNonBlocking);
      r != hipSuccess) {
    context->memoryStream_ = nullptr;
    return context->fail(LOOMRT_ERROR_RESOURCES, r,
                         "cannot create the memory stream");
  }
  *out = std::move(context);
  return Status();
}

HipContext::~HipContext() {
  // Destroying a stream under a kernel that never exits may block forever;
  // a wedged device is left to the process exit.
  if (wedged() || !memoryStream_)
    return;
  if (runtime_.hipSetDevice(info_.ordinal) == hipSuccess)
    (void)runtime_.hipStreamDestroy(memoryStream_);
}

Status HipContext::makeCurrent() const {
  if (hipError_t r = runtime_.hipSetDevice(info_.ordinal); r != hipSuccess)
    return fail(LOOMRT_ERROR_BACKEND_UNAVAILABLE, r,
                "cannot make it current on this thread (hipSetDevice)");
  return Status();
}

void HipContext::markWedged(const std::string &why) {
  std::lock_guard<std::mutex> lock(wedgedMu_);
  if (!wedged_.load(std::memory_order_relaxed))
    wedgedReason_ = why;
  wedged_.store(true, std::memory_order_release);
}

std::string HipContext::wedgedReason() const {
  std::lock_guard<std::mutex> lock(wedgedMu_);
  return wedgedReason_;
}

} // namespace hip
} // namespace rt
} // namespace loom
