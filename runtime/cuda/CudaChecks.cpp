//===- CudaChecks.cpp - What a CUDA program needs from its device ---------===//

#include "runtime/cuda/CudaChecks.h"

#include <cctype>
#include <cstring>

namespace loom {
namespace rt {
namespace cuda {

namespace {

/// "sm_90a" -> {9, 0, 'a'}; false for anything else (gfx950, compute_90).
bool parseArch(const char *arch, int *major, int *minor, char *suffix) {
  if (!arch || std::strncmp(arch, "sm_", 3) != 0)
    return false;
  const char *p = arch + 3;
  int value = 0, digits = 0;
  for (; std::isdigit(static_cast<unsigned char>(*p)) && digits < 4;
       ++p, ++digits)
    value = value * 10 + (*p - '0');
  if (digits < 2)
    return false;
  *suffix = *p;
  if (*p && (p[1] || (*p != 'a' && *p != 'f')))
    return false;
  *major = value / 10;
  *minor = value % 10;
  return true;
}

std::string capability(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace

std::string describeDevice(const CudaDeviceInfo &info) {
  return "cuda device " + std::to_string(info.ordinal) + " (" + info.name +
         ", compute capability " + capability(info.ccMajor, info.ccMinor) +
         ", " + std::to_string(info.smCount) + " SMs)";
}

CodeKind classifyCode(const void *data, size_t size) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  if (!bytes || size < 4)
    return CodeKind::Unknown;
  if (bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F')
    return CodeKind::Cubin;
  // The fatbin header's magic, 0xBA55ED50, little-endian.
  if (bytes[0] == 0x50 && bytes[1] == 0xED && bytes[2] == 0x55 &&
      bytes[3] == 0xBA)
    return CodeKind::Fatbin;
  // PTX is text: comments or directives first.
  if (bytes[0] == '/' || bytes[0] == '.' || std::isspace(bytes[0]))
    return CodeKind::Ptx;
  return CodeKind::Unknown;
}

Status checkArch(const std::string &artifact, const char *arch, CodeKind kind,
                 const CudaDeviceInfo &info) {
  int major = 0, minor = 0;
  char suffix = 0;
  const std::string device = describeDevice(info);
  if (!parseArch(arch, &major, &minor, &suffix))
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot run ", quoted(artifact),
                     " on ", device, ": it is built for ", quoted(arch),
                     ", not a CUDA architecture (sm_XY, sm_XYa, sm_XYf)");
  const int have = info.ccMajor * 10 + info.ccMinor;
  const int need = major * 10 + minor;
  bool runs = false;
  std::string rule;
  if (suffix == 'a') {
    runs = have == need;
    rule = "only on compute capability " + capability(major, minor);
  } else if (suffix == 'f' || kind != CodeKind::Ptx) {
    // Family targets and SASS run within one major version, on the same or
    // a later minor.
    runs = info.ccMajor == major && info.ccMinor >= minor;
    rule = "on compute capability " + std::to_string(major) +
           ".x, x >= " + std::to_string(minor);
  } else {
    runs = have >= need;
    rule = "on compute capability " + capability(major, minor) + " or later";
  }
  if (runs)
    return Status();
  return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot run ", quoted(artifact),
                   " on ", device, ": it is built for ", arch, ", which runs ",
                   rule, "; the device is sm_", have,
                   " (rebuild the artifact for it)");
}

Status checkBlockShape(const std::string &program, const BlockShape &shape,
                       const CudaDeviceInfo &info) {
  const std::string device = describeDevice(info);
  if (shape.threadsPerBlock < 1 ||
      shape.threadsPerBlock > info.maxThreadsPerBlock)
    return makeError(LOOMRT_ERROR_RESOURCES, "program ", quoted(program),
                     " wants ", shape.threadsPerBlock,
                     " threads per worker block; ", device, " allows 1 to ",
                     info.maxThreadsPerBlock);
  if (shape.dynamicSmemBytes < 0 ||
      shape.dynamicSmemBytes > info.maxSmemPerBlockOptin)
    return makeError(LOOMRT_ERROR_RESOURCES, "program ", quoted(program),
                     " wants ", shape.dynamicSmemBytes,
                     " bytes of dynamic shared memory per worker block; ",
                     device, " allows at most ", info.maxSmemPerBlockOptin);
  return Status();
}

Status checkCoResidency(const std::string &program, const BlockShape &shape,
                        int blocksPerSm, int registers,
                        const CudaDeviceInfo &info) {
  return rt::checkCoResidency(program, shape, blocksPerSm, registers,
                              describeDevice(info), info.smCount, "SM");
}

} // namespace cuda
} // namespace rt
} // namespace loom
