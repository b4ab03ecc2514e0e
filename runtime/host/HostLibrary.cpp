//===- HostLibrary.cpp - A host program shared library --------------------===//

#include "runtime/host/HostLibrary.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/stat.h>

namespace loom {
namespace rt {

Status HostLibrary::open(const std::string &path,
                         std::shared_ptr<const HostLibrary> *out) {
  // dlopen's own message for a missing file is fine, but checking first
  // gives the same wording everywhere and keeps dlopen from searching the
  // library path for a bare name.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot load host program ",
                     quoted(path), ": ", std::strerror(errno));
  std::string dlPath = path.find('/') == std::string::npos ? "./" + path : path;
  void *handle = ::dlopen(dlPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot load host program ",
                     quoted(path), ": ", why ? why : "dlopen failed");
  }
  void *symbol = ::dlsym(handle, LOOM_HOST_PROGRAM_SYMBOL);
  if (!symbol) {
    ::dlclose(handle);
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "host program ", quoted(path),
                     " does not export ", quoted(LOOM_HOST_PROGRAM_SYMBOL),
                     " (not a Loom host program?)");
  }
  auto getProgram = reinterpret_cast<LoomGetProgramFn>(symbol);
  const LoomProgramDesc *desc = getProgram();
  if (!desc) {
    ::dlclose(handle);
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "host program ", quoted(path),
                     ": ", LOOM_HOST_PROGRAM_SYMBOL, "() returned null");
  }
  // Checked here too (the table checks it again) so the message can name
  // the file: a stale build is the usual cause.
  if (desc->abi_version != LOOM_PROGRAM_ABI_VERSION) {
    uint32_t version = desc->abi_version;
    ::dlclose(handle);
    return makeError(LOOMRT_ERROR_ABI_MISMATCH, "host program ", quoted(path),
                     " has program ABI version ", version,
                     "; this runtime reads version ", LOOM_PROGRAM_ABI_VERSION,
                     " (rebuild it)");
  }
  auto metaFault = reinterpret_cast<LoomGetMetaFaultFn>(
      ::dlsym(handle, LOOM_HOST_META_FAULT_SYMBOL));
  out->reset(new HostLibrary(handle, desc, metaFault));
  return Status();
}

HostLibrary::~HostLibrary() { ::dlclose(handle_); }

} // namespace rt
} // namespace loom
