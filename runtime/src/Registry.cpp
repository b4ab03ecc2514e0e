//===- Registry.cpp - Which backends this build has -----------------------===//
//
// The one place that knows which backends are compiled in. A backend that is
// known but not built still has an entry, so asking for it says "not built"
// rather than "unknown kind". The CUDA backend is always built: it needs no
// CUDA toolkit, and loads libcuda.so.1 only when a cuda device is asked for
// (so a machine without a driver gets "cannot load libcuda.so.1", by name).
// The HIP backend likewise needs no ROCm to build and loads libamdhip64 only
// when a hip device is asked for.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDevice.h"
#include "runtime/hip/HipDevice.h"
#include "runtime/host/HostDevice.h"
#include "runtime/src/Backend.h"

#include <cstring>

namespace loom {
namespace rt {

namespace {

struct BackendEntry {
  const char *kind;
  // Null when this build lacks the backend.
  Status (*create)(int ordinal, std::unique_ptr<Device> *out);
  Status (*count)(int *count);
};

const BackendEntry kBackends[] = {
    {"host", createHostDevice, countHostDevices},
    {"cuda", cuda::createCudaDevice, cuda::countCudaDevices},
    {"hip", hip::createHipDevice, hip::countHipDevices},
};

Status findBackend(const char *kind, const BackendEntry **out) {
  if (!kind)
    return makeError(LOOMRT_ERROR_INVALID_ARGUMENT, "device kind is null");
  std::string known, built;
  for (const BackendEntry &entry : kBackends) {
    known += (known.empty() ? "" : ", ") + std::string(entry.kind);
    if (entry.create)
      built += (built.empty() ? "" : ", ") + std::string(entry.kind);
  }
  for (const BackendEntry &entry : kBackends) {
    if (std::strcmp(entry.kind, kind) != 0)
      continue;
    if (!entry.create)
      return makeError(
          LOOMRT_ERROR_BACKEND_UNAVAILABLE, "device kind ", quoted(kind),
          ": its backend is not built into this loomrt (built: ", built, ")");
    *out = &entry;
    return Status();
  }
  return makeError(LOOMRT_ERROR_UNKNOWN_DEVICE, "unknown device kind ",
                   quoted(kind), " (known kinds: ", known, ")");
}

} // namespace

Status createDevice(const char *kind, int ordinal,
                    std::unique_ptr<Device> *out) {
  const BackendEntry *entry = nullptr;
  if (Status s = findBackend(kind, &entry); !s.ok())
    return s;
  return entry->create(ordinal, out);
}

Status countDevices(const char *kind, int *count) {
  const BackendEntry *entry = nullptr;
  if (Status s = findBackend(kind, &entry); !s.ok())
    return s;
  return entry->count(count);
}

} // namespace rt
} // namespace loom
