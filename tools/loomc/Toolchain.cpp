//===- Toolchain.cpp - The compilers loomc drives --------------------------===//
#include "tools/loomc/Toolchain.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace llvm;

namespace {

/// Runs `program` with `args`; its output goes to `output`. Returns false
/// and sets `error` when it cannot start or exits non-zero.
bool run(const std::string &program, ArrayRef<std::string> args,
         std::string &output, std::string &error) {
  SmallString<128> log;
  if (std::error_code ec = sys::fs::createTemporaryFile("loomc-tool", "log", log)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  SmallVector<StringRef> refs{program};
  for (const std::string &arg : args)
    refs.push_back(arg);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string execError;
  int rc = sys::ExecuteAndWait(program, refs, std::nullopt, redirects, 0, 0,
                               &execError);
  if (auto text = MemoryBuffer::getFile(log))
    output = (*text)->getBuffer().str();
  sys::fs::remove(log);
  if (rc == 0)
    return true;
  error = program + " failed (" +
          (execError.empty() ? "exit " + std::to_string(rc) : execError) +
          "):\n" + StringRef(output).take_front(6000).str();
  return false;
}

} // namespace

std::vector<std::string> loom::extraFlags(const char *variable) {
  std::vector<std::string> flags;
  if (const char *value = std::getenv(variable)) {
    SmallVector<StringRef> parts;
    StringRef(value).split(parts, ' ', -1, /*KeepEmpty=*/false);
    for (StringRef part : parts)
      flags.push_back(part.str());
  }
  return flags;
}

bool loom::compileSharedLibrary(const std::string &sourcePath,
                                const std::string &libraryPath,
                                const std::string &kernelsRoot,
                                std::string &error) {
  const char *cxxEnv = std::getenv("CXX");
  std::string name = cxxEnv && *cxxEnv ? cxxEnv : "c++";
  ErrorOr<std::string> cxx = sys::findProgramByName(name);
  if (!cxx) {
    error = "cannot find the C++ compiler '" + name + "' (set CXX)";
    return false;
  }
  std::vector<std::string> args = {"-std=c++17", "-O2", "-fPIC", "-shared",
                                   "-fvisibility=hidden", "-I" + kernelsRoot};
  for (std::string &flag : extraFlags(kHostFlagsVariable))
    args.push_back(flag);
  args.insert(args.end(), {sourcePath, "-o", libraryPath});
  std::string output;
  return run(*cxx, args, output, error);
}

bool loom::compileCubin(const std::string &sourcePath,
                        const std::string &cubinPath, const std::string &arch,
                        const std::string &kernelsRoot,
                        std::string &ptxasReport, std::string &error) {
  std::string nvcc;
  if (const char *env = std::getenv("LOOM_NVCC"); env && *env)
    nvcc = env;
  else if (ErrorOr<std::string> found = sys::findProgramByName("nvcc"))
    nvcc = *found;
  else if (sys::fs::can_execute("/usr/local/cuda/bin/nvcc"))
    nvcc = "/usr/local/cuda/bin/nvcc";
  if (nvcc.empty()) {
    error = "cannot find nvcc (set LOOM_NVCC, or put the CUDA toolkit's bin/ "
            "on PATH) to build for " + arch;
    return false;
  }
  // sm_90a -> compute_90a: the 'a' features (wgmma, setmaxnreg) need both.
  std::string compute = "compute_" + arch.substr(3);
  std::vector<std::string> args = {
      "-cubin", "-std=c++17", "-O3", "--expt-relaxed-constexpr",
      "-gencode=arch=" + compute + ",code=" + arch, "-Xptxas", "-v",
      "-I" + kernelsRoot};
  for (std::string &flag : extraFlags(kNvccFlagsVariable))
    args.push_back(flag);
  args.insert(args.end(), {sourcePath, "-o", cubinPath});
  return run(nvcc, args, ptxasReport, error);
}

bool loom::compileHsaco(const std::string &sourcePath,
                        const std::string &hsacoPath, const std::string &arch,
                        const std::string &kernelsRoot,
                        std::string &resourceReport, std::string &error) {
  std::string clang;
  if (const char *env = std::getenv("LOOM_HIP_CLANG"); env && *env) {
    // A path is taken as it is; a bare name is searched on PATH.
    if (StringRef(env).contains('/')) {
      if (sys::fs::can_execute(env))
        clang = env;
    } else if (ErrorOr<std::string> found = sys::findProgramByName(env)) {
      clang = *found;
    }
    if (clang.empty()) {
      error = std::string("cannot run LOOM_HIP_CLANG='") + env +
              "' to build for " + arch;
      return false;
    }
  } else if (ErrorOr<std::string> found = sys::findProgramByName("clang++-22")) {
    clang = *found;
  } else if (sys::fs::can_execute("/usr/lib/llvm-22/bin/clang++")) {
    clang = "/usr/lib/llvm-22/bin/clang++";
  }
  if (clang.empty()) {
    error = "cannot find clang++-22 (set LOOM_HIP_CLANG to a clang++ with the "
            "AMDGPU backend, e.g. Debian's clang-22) to build for " + arch;
    return false;
  }
  std::vector<std::string> args = {
      "-x", "hip", "--offload-arch=" + arch, "-nogpuinc", "-nogpulib",
      "--cuda-device-only", "--no-gpu-bundle-output", "-std=c++17", "-O3",
      // The whole program is one kernel: with the machine LICM on, every
      // body's constants are hoisted out of the task loop and SGPRs spill
      // into VGPR lanes (tests/amd/check-isa.sh shows it).
      "-mllvm", "-disable-machine-licm",
      // Registers, scratch, occupancy and LDS per kernel, for the report.
      "-Rpass-analysis=kernel-resource-usage", "-I" + kernelsRoot};
  for (std::string &flag : extraFlags(kHipFlagsVariable))
    args.push_back(flag);
  args.insert(args.end(), {sourcePath, "-o", hsacoPath});
  return run(clang, args, resourceReport, error);
}
