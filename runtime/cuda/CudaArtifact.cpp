//===- CudaArtifact.cpp - A GPU program's host library --------------------===//

#include "runtime/cuda/CudaArtifact.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/stat.h>

namespace loom {
namespace rt {
namespace cuda {

Status CudaArtifact::open(const std::string &path,
                          std::shared_ptr<const CudaArtifact> *out) {
  // Same wording as the host loader, and no library-path search for a bare
  // name.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot load cuda program ",
                     quoted(path), ": ", std::strerror(errno));
  std::string dlPath = path.find('/') == std::string::npos ? "./" + path : path;
  void *handle = ::dlopen(dlPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot load cuda program ",
                     quoted(path), ": ", why ? why : "dlopen failed");
  }
  void *symbol = ::dlsym(handle, LOOM_DEVICE_PROGRAM_SYMBOL);
  if (!symbol) {
    // A host program is the likely mix-up; say so.
    bool host = ::dlsym(handle, LOOM_HOST_PROGRAM_SYMBOL) != nullptr;
    ::dlclose(handle);
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cuda program ", quoted(path),
                     " does not export ", quoted(LOOM_DEVICE_PROGRAM_SYMBOL),
                     host ? " (it is a host program: load it on a \"host\" "
                            "device)"
                          : " (not a Loom device artifact?)");
  }
  auto get = reinterpret_cast<LoomGetDeviceProgramFn>(symbol);
  const LoomDeviceProgram *program = get();
  if (!program) {
    ::dlclose(handle);
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cuda program ", quoted(path),
                     ": ", LOOM_DEVICE_PROGRAM_SYMBOL, "() returned null");
  }
  if (Status s = check(path, *program); !s.ok()) {
    ::dlclose(handle);
    return s;
  }
  out->reset(new CudaArtifact(path, handle, program));
  return Status();
}

Status CudaArtifact::check(const std::string &path,
                           const LoomDeviceProgram &d) {
  // The version decides the layout of everything after it.
  if (d.abi_version != LOOM_DEVICE_ABI_VERSION)
    return makeError(LOOMRT_ERROR_ABI_MISMATCH, "cuda program ", quoted(path),
                     " has device ABI version ", d.abi_version,
                     "; this runtime reads version ", LOOM_DEVICE_ABI_VERSION,
                     " (rebuild it)");
  auto invalid = [&](const auto &...parts) {
    return makeError(LOOMRT_ERROR_INVALID_PROGRAM, "cuda program ",
                     quoted(path), ": ", parts...);
  };
  if (!d.program)
    return invalid("its task table (program) is null");
  if (d.program->abi_version != LOOM_PROGRAM_ABI_VERSION)
    return makeError(LOOMRT_ERROR_ABI_MISMATCH, "cuda program ", quoted(path),
                     " has program ABI version ", d.program->abi_version,
                     "; this runtime reads version ", LOOM_PROGRAM_ABI_VERSION,
                     " (rebuild it)");
  if (!d.arch || !*d.arch)
    return invalid("arch is empty");
  if (!d.code_object || d.code_object_size == 0)
    return invalid("it has no code object");
  if (!d.kernel_name || !*d.kernel_name)
    return invalid("kernel_name is empty");
  if (d.threads_per_block < 1)
    return invalid("threads_per_block is ", d.threads_per_block);
  if (d.dynamic_smem_bytes < 0)
    return invalid("dynamic_smem_bytes is ", d.dynamic_smem_bytes);
  return Status();
}

CudaArtifact::~CudaArtifact() { ::dlclose(handle_); }

} // namespace cuda
} // namespace rt
} // namespace loom
