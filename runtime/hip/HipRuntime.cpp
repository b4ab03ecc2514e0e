//===- HipRuntime.cpp - The HIP runtime API, loaded at run time -----------===//

#include "runtime/hip/HipRuntime.h"

#include <cstdlib>
#include <dlfcn.h>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>

namespace loom {
namespace rt {
namespace hip {

namespace {

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

/// Fills `runtime` from `handle`; names the first missing required symbol.
Status resolveAll(void *handle, HipRuntime &runtime) {
  std::string missing;
#define LOOM_HIP_RUNTIME_RESOLVE(member, required, ret, signature, ...)        \
  if (std::string tried = resolve(handle, runtime.member, {__VA_ARGS__});      \
      !tried.empty() && (required) && missing.empty())                         \
    missing = tried;
  LOOM_HIP_RUNTIME_SYMBOLS(LOOM_HIP_RUNTIME_RESOLVE)
#undef LOOM_HIP_RUNTIME_RESOLVE
  if (missing.empty())
    return Status();
  return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "hip: ", runtime.path,
                   " lacks the required symbol ", missing,
                   "; ROCm 6.0 or later is needed (or this is not "
                   "libamdhip64)");
}

std::mutex gRuntimesMu;
// Never freed: modules, streams and their code live in these libraries
// until the process exits.
std::map<std::string, std::unique_ptr<HipRuntime>> *gRuntimes =
    new std::map<std::string, std::unique_ptr<HipRuntime>>;

} // namespace

const std::vector<std::string> &hipRuntimeCandidates() {
  static const std::vector<std::string> *candidates =
      new std::vector<std::string>{
          "libamdhip64.so",
          "libamdhip64.so.7",
          "libamdhip64.so.6",
          "/opt/rocm/lib/libamdhip64.so",
      };
  return *candidates;
}

Status loadHipRuntime(const HipRuntime **out) {
  const char *override = std::getenv(kHipRuntimeEnv);
  std::vector<std::string> candidates;
  std::string wanted;
  if (override && *override) {
    candidates.push_back(override);
    wanted = std::string(override) + " (from " + kHipRuntimeEnv + ")";
  } else {
    candidates = hipRuntimeCandidates();
    wanted = "libamdhip64";
  }

  std::lock_guard<std::mutex> lock(gRuntimesMu);
  for (const std::string &candidate : candidates)
    if (auto it = gRuntimes->find(candidate); it != gRuntimes->end()) {
      *out = it->second.get();
      return Status();
    }
  void *handle = nullptr;
  std::string tried, path;
  for (const std::string &candidate : candidates) {
    // RTLD_LOCAL: the runtime's symbols must not satisfy anyone else's
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
    return makeError(LOOMRT_ERROR_BACKEND_UNAVAILABLE, "hip: cannot load ",
                     wanted, " (", tried, ")");

  auto runtime = std::make_unique<HipRuntime>();
  runtime->path = path;
  if (Status s = resolveAll(handle, *runtime); !s.ok()) {
    ::dlclose(handle);
    return s;
  }
  if (runtime->hipRuntimeGetVersion)
    (void)runtime->hipRuntimeGetVersion(&runtime->version);
  *out = runtime.get();
  gRuntimes->emplace(path, std::move(runtime));
  return Status();
}

std::string hipErrorText(const HipRuntime &runtime, hipError_t result) {
  const char *name = runtime.hipGetErrorName(result);
  if (!name || !*name)
    return "HIP error " + std::to_string(result);
  std::string out = name;
  const char *text = runtime.hipGetErrorString(result);
  if (text && *text && out != text)
    out += std::string(" (") + text + ")";
  return out;
}

bool isStickyHipError(hipError_t result) {
  switch (result) {
  case hipErrorIllegalAddress:
  case hipErrorLaunchTimeOut:
  case hipErrorAssert:
  case hipErrorLaunchFailure:
    return true;
  default:
    return false;
  }
}

} // namespace hip
} // namespace rt
} // namespace loom
