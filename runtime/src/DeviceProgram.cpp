//===- DeviceProgram.cpp - A GPU artifact, before any vendor call ---------===//

#include "runtime/src/DeviceProgram.h"

#include "runtime/src/Binding.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <sys/stat.h>

namespace loom {
namespace rt {

namespace {

/// ProgramTable insists on a run_task (host programs need one). A device
/// program's bodies run inside its kernel, so the copy of its table gets
/// this stand-in, which nothing calls.
int32_t bodiesRunOnTheDevice(int32_t, const LoomBinding *, void *) {
  return -1;
}

} // namespace

Status DeviceArtifact::open(const char *kind, const std::string &path,
                            std::shared_ptr<const DeviceArtifact> *out) {
  // Same wording as the host loader, and no library-path search for a bare
  // name.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot load ", kind,
                     " program ", quoted(path), ": ", std::strerror(errno));
  std::string dlPath = path.find('/') == std::string::npos ? "./" + path : path;
  void *handle = ::dlopen(dlPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = ::dlerror();
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot load ", kind,
                     " program ", quoted(path), ": ",
                     why ? why : "dlopen failed");
  }
  void *symbol = ::dlsym(handle, LOOM_DEVICE_PROGRAM_SYMBOL);
  if (!symbol) {
    // A host program is the likely mix-up; say so.
    bool host = ::dlsym(handle, LOOM_HOST_PROGRAM_SYMBOL) != nullptr;
    ::dlclose(handle);
    return makeError(LOOMRT_ERROR_LOAD_FAILED, kind, " program ", quoted(path),
                     " does not export ", quoted(LOOM_DEVICE_PROGRAM_SYMBOL),
                     host ? " (it is a host program: load it on a \"host\" "
                            "device)"
                          : " (not a Loom device artifact?)");
  }
  auto get = reinterpret_cast<LoomGetDeviceProgramFn>(symbol);
  const LoomDeviceProgram *program = get();
  if (!program) {
    ::dlclose(handle);
    return makeError(LOOMRT_ERROR_LOAD_FAILED, kind, " program ", quoted(path),
                     ": ", LOOM_DEVICE_PROGRAM_SYMBOL, "() returned null");
  }
  if (Status s = check(kind, path, *program); !s.ok()) {
    ::dlclose(handle);
    return s;
  }
  out->reset(new DeviceArtifact(path, handle, program));
  return Status();
}

Status DeviceArtifact::check(const char *kind, const std::string &path,
                             const LoomDeviceProgram &d) {
  // The version decides the layout of everything after it (the same from
  // the oldest version read on; DeviceAbi.h).
  if (d.abi_version < LOOM_DEVICE_ABI_OLDEST_VERSION ||
      d.abi_version > LOOM_DEVICE_ABI_VERSION)
    return makeError(LOOMRT_ERROR_ABI_MISMATCH, kind, " program ", quoted(path),
                     " has device ABI version ", d.abi_version,
                     "; this runtime reads versions ",
                     LOOM_DEVICE_ABI_OLDEST_VERSION, " to ",
                     LOOM_DEVICE_ABI_VERSION, " (rebuild it)");
  auto invalid = [&](const auto &...parts) {
    return makeError(LOOMRT_ERROR_INVALID_PROGRAM, kind, " program ",
                     quoted(path), ": ", parts...);
  };
  if (!d.program)
    return invalid("its task table (program) is null");
  if (d.program->abi_version != LOOM_PROGRAM_ABI_VERSION)
    return makeError(LOOMRT_ERROR_ABI_MISMATCH, kind, " program ", quoted(path),
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
  if (d.flags & ~uint32_t(LOOM_DEVICE_PROFILED | LOOM_DEVICE_INLINE_BINDINGS))
    return invalid("flags has unknown bits (", d.flags,
                   "; known: ", LOOM_DEVICE_PROFILED, " = profiled, ",
                   LOOM_DEVICE_INLINE_BINDINGS, " = inline bindings)");
  if (d.flags & LOOM_DEVICE_INLINE_BINDINGS) {
    if (d.abi_version < 4)
      return invalid("flags say its kernel takes its bindings by value, "
                     "which device ABI version ",
                     d.abi_version, " has no kernel do (version 4 does)");
    // The emitter gives a kernel that parameter only when it fits; one that
    // does not could not be launched.
    const int32_t buffers = d.program->num_buffers;
    if (buffers < 0 || !LOOM_INLINE_BINDINGS_FIT(buffers))
      return invalid("flags say its kernel takes the bindings of its ", buffers,
                     " buffers by value, but those are ",
                     LOOM_INLINE_BINDINGS_PARAM_BYTES(buffers),
                     " bytes of kernel parameters (at most ",
                     LOOM_KERNEL_PARAM_BYTES, ")");
  }
  return Status();
}

DeviceArtifact::~DeviceArtifact() { ::dlclose(handle_); }

Status createDeviceTable(const DeviceArtifact &artifact, uint32_t flags,
                         std::shared_ptr<const ProgramTable> *out) {
  LoomProgramDesc desc = *artifact.program().program;
  desc.run_task = bodiesRunOnTheDevice;
  return ProgramTable::create(desc, artifact.path(), flags, out);
}

Status checkCoResidency(const std::string &program,
                        const DeviceBlockShape &shape, int blocksPerUnit,
                        int registers, const std::string &device, int units,
                        const char *unit) {
  const int64_t fits = static_cast<int64_t>(blocksPerUnit) * units;
  if (blocksPerUnit > 0 && fits >= shape.numWorkers)
    return Status();
  std::string why;
  if (registers >= 0)
    why = " (" + std::to_string(registers) + " registers per thread)";
  return makeError(
      LOOMRT_ERROR_RESOURCES, "program ", quoted(program), " needs ",
      shape.numWorkers, " co-resident worker blocks (", shape.threadsPerBlock,
      " threads and ", shape.dynamicSmemBytes,
      " bytes of dynamic shared memory each", why, "), but ", device,
      " holds only ", blocksPerUnit, " per ", unit, " x ", units, " ", unit,
      "s = ", fits,
      " at once; a persistent kernel with blocks waiting to start deadlocks, "
      "so it is not launched (schedule it for at most ",
      fits, " workers, or use fewer threads or less shared memory)");
}

uint64_t deviceTimeoutCycles(uint32_t watchdogMs, int clockKHz) {
  // Clock unknown: assume a fast one (a later backstop, never an earlier).
  const uint64_t kHz = clockKHz > 0 ? static_cast<uint64_t>(clockKHz) : 4000000;
  const uint64_t ms = 2 * static_cast<uint64_t>(watchdogMs);
  if (ms > std::numeric_limits<uint64_t>::max() / kHz)
    return std::numeric_limits<uint64_t>::max();
  return ms * kHz;
}


} // namespace rt
} // namespace loom
