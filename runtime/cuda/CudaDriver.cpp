//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//

#include "runtime/cuda/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace loom {
namespace rt {
namespace cuda {

namespace {

/// Where libcuda.so.1 may be when the dynamic loader's search misses it
/// (containers without ldconfig, WSL). The plain name comes first so the
/// loader's choice, the one the rest of the process gets, wins.
const char *const kDriverPaths[] = {
    "libcuda.so.1",
#if defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
#else
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
#endif
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",
};

/// Resolves `slot` from the first of `names` the library has; otherwise
/// returns the names, quoted, for the message.
template <typename Fn>
std::string resolve(void *handle, Fn &slot,
                    std::initializer_list<const char *> names) {
  std::string tried;
  for (const char *name : names) {
    if (void *symbol = ::dlsym(handle, name)) {
      slot = reinterpret_cast<Fn>(symbol);
      return std::string();
    }
    tried += (tried.empty() ? "" : " or ") + quoted(name);
  }
  return tried;
}

/// Fills `driver` from `handle`; names the first missing required symbol.
Status resolveAll(void *handle, CudaDriver &driver) {
  std::string missing;
#define LOOM_CUDA_DRIVER_RESOLVE(member, required, signature, ...)             \
  if (std::string tried = resolve(handle, driver.member, {__VA_ARGS__});       \
      !tried.empty() && (required) && missing.empty())                         \
    missing = tried;
  LOOM_CUDA_DRIVER_SYMBOLS(LOOM_CUDA_DRIVER_RESOLVE)
#undef LOOM_CUDA_DRIVER_RESOLVE
  if (missing.empty())
    return Status();
  return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "cuda: ", driver.path,
                   " lacks the required symbol ", missing,
                   "; the NVIDIA driver is too old or this is not libcuda");
}

std::mutex gDriversMu;
// Never freed: contexts, modules and their code live in these libraries
// until the process exits.
std::map<std::string, std::unique_ptr<CudaDriver>> *gDrivers =
    new std::map<std::string, std::unique_ptr<CudaDriver>>;

} // namespace

Status loadCudaDriver(const CudaDriver **out) {
  const char *override = std::getenv(kCudaDriverEnv);
  std::vector<std::string> candidates;
  std::string wanted;
  if (override && *override) {
    candidates.push_back(override);
    wanted = std::string(override) + " (from " + kCudaDriverEnv + ")";
  } else {
    candidates.assign(std::begin(kDriverPaths), std::end(kDriverPaths));
    wanted = "libcuda.so.1";
  }

  std::lock_guard<std::mutex> lock(gDriversMu);
  std::string key = candidates.front();
  if (auto it = gDrivers->find(key); it != gDrivers->end()) {
    *out = it->second.get();
    return Status();
  }
  void *handle = nullptr;
  std::string tried, path;
  for (const std::string &candidate : candidates) {
    // RTLD_LOCAL: the driver's symbols must not satisfy anyone else's
    // undefined references (e.g. a program library's).
    handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      path = candidate;
      break;
    }
    const char *why = ::dlerror();
    tried += (tried.empty() ? "" : "; ") +
             std::string(why ? why : candidate + ": dlopen failed");
  }
  if (!handle)
    return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "cuda: cannot load ",
                     wanted, " (", tried, ")");

  auto driver = std::make_unique<CudaDriver>();
  driver->path = path;
  if (Status s = resolveAll(handle, *driver); !s.ok()) {
    ::dlclose(handle);
    return s;
  }
  (void)driver->cuDriverGetVersion(&driver->version);
  *out = driver.get();
  gDrivers->emplace(key, std::move(driver));
  return Status();
}

std::string cudaErrorText(const CudaDriver &driver, CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (driver.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(result);
  std::string out = name;
  if (driver.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    out += std::string(" (") + text + ")";
  return out;
}

bool isStickyCudaError(CUresult result) {
  switch (result) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
    return true;
  default:
    return false;
  }
}

} // namespace cuda
} // namespace rt
} // namespace loom
