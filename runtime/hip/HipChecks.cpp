//===- HipChecks.cpp - What a HIP program needs from its device -----------===//

#include "runtime/hip/HipChecks.h"

#include <cctype>
#include <cstring>

namespace loom {
namespace rt {
namespace hip {

namespace {

bool isLowerAlnum(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'z');
}

} // namespace

std::string describeDevice(const HipDeviceInfo &info) {
  return "hip device " + std::to_string(info.ordinal) + " (" + info.name +
         ", " + info.gcnArchName + ", " + std::to_string(info.cuCount) +
         " CUs)";
}

bool GfxTarget::generic() const {
  const char *suffix = "-generic";
  const size_t n = std::strlen(suffix);
  return processor.size() > n &&
         processor.compare(processor.size() - n, n, suffix) == 0;
}

bool parseGfxTarget(const char *text, GfxTarget *out) {
  if (!text || std::strncmp(text, "gfx", 3) != 0)
    return false;
  GfxTarget t;
  const char *p = text + 3;
  // gfx950, gfx90a, gfx1201, gfx9-4-generic: digits and letters, then
  // dash-separated parts.
  const char *start = p;
  while (isLowerAlnum(*p) || (*p == '-' && p != start && isLowerAlnum(p[1])))
    ++p;
  if (p == start || !std::isdigit(static_cast<unsigned char>(*start)))
    return false;
  t.processor.assign(text, p);
  while (*p == ':') {
    const char *name = ++p;
    while (isLowerAlnum(*p) || *p == '_')
      ++p;
    if (p == name || (*p != '+' && *p != '-'))
      return false;
    t.features.emplace_back(std::string(name, p), *p == '+');
    ++p;
  }
  if (*p)
    return false;
  *out = std::move(t);
  return true;
}

Status checkArch(const std::string &artifact, const char *arch,
                 const HipDeviceInfo &info) {
  const std::string device = describeDevice(info);
  GfxTarget want, have;
  if (!parseGfxTarget(arch, &want))
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot run ", quoted(artifact),
                     " on ", device, ": it is built for ", quoted(arch),
                     ", not an AMD GPU architecture (gfxNNN, optionally with "
                     "target features: gfx942:xnack-)");
  if (!parseGfxTarget(info.gcnArchName.c_str(), &have))
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot run ", quoted(artifact),
                     " on ", device, ": the device reports the architecture ",
                     quoted(info.gcnArchName),
                     ", which this runtime cannot compare with the "
                     "artifact's ",
                     arch);
  // A generic target covers a family; only the code object loader knows
  // which processors are in it.
  if (want.generic())
    return Status();
  if (want.processor != have.processor)
    return makeError(LOOMRT_ERROR_LOAD_FAILED, "cannot run ", quoted(artifact),
                     " on ", device, ": it is built for ", arch,
                     " and the device is ", have.processor,
                     " (rebuild the artifact for ", have.processor, ")");
  for (const auto &feature : want.features)
    for (const auto &actual : have.features)
      if (feature.first == actual.first && feature.second != actual.second)
        return makeError(
            LOOMRT_ERROR_LOAD_FAILED, "cannot run ", quoted(artifact), " on ",
            device, ": it is built for ", arch, ", which needs ", feature.first,
            feature.second ? "+" : "-", ", but the device runs with ",
            actual.first, actual.second ? "+" : "-",
            " (rebuild the artifact for ", have.processor,
            " without target features, or for ", have.processor, ":",
            actual.first, actual.second ? "+" : "-", ")");
  return Status();
}

Status checkBlockShape(const std::string &program,
                       const DeviceBlockShape &shape,
                       const HipDeviceInfo &info) {
  const std::string device = describeDevice(info);
  if (shape.threadsPerBlock < 1 ||
      shape.threadsPerBlock > info.maxThreadsPerBlock)
    return makeError(LOOMRT_ERROR_RESOURCES, "program ", quoted(program),
                     " wants ", shape.threadsPerBlock,
                     " threads per worker block; ", device, " allows 1 to ",
                     info.maxThreadsPerBlock);
  if (shape.dynamicSmemBytes < 0 ||
      shape.dynamicSmemBytes > info.maxSharedPerBlock)
    return makeError(LOOMRT_ERROR_RESOURCES, "program ", quoted(program),
                     " wants ", shape.dynamicSmemBytes,
                     " bytes of dynamic shared memory (LDS) per worker block; ",
                     device, " allows at most ", info.maxSharedPerBlock);
  return Status();
}

Status checkCoResidency(const std::string &program,
                        const DeviceBlockShape &shape, int blocksPerCu,
                        int registers, const HipDeviceInfo &info) {
  return rt::checkCoResidency(program, shape, blocksPerCu, registers,
                              describeDevice(info), info.cuCount, "CU");
}

uint64_t timeoutCycles(uint32_t watchdogMs, const HipDeviceInfo &info) {
  return deviceTimeoutCycles(watchdogMs, info.clockInstructionKHz > 0
                                             ? info.clockInstructionKHz
                                             : info.clockKHz);
}

} // namespace hip
} // namespace rt
} // namespace loom
