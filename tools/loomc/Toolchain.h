//===- Toolchain.h - The compilers loomc drives ------------------*- C++ -*-===//
#ifndef LOOM_TOOLS_LOOMC_TOOLCHAIN_H
#define LOOM_TOOLS_LOOMC_TOOLCHAIN_H

#include <string>
#include <vector>

namespace loom {

/// Compiles C++ source (`sourcePath`) into the shared library `libraryPath`
/// with the system C++ compiler (`$CXX`, else `c++`), with `-I kernelsRoot`
/// (the directory that holds kernels/). `$LOOM_HOST_CXXFLAGS` adds flags,
/// space-separated (e.g. -fsanitize=thread). On failure returns false and
/// sets `error`, with the compiler's output.
bool compileSharedLibrary(const std::string &sourcePath,
                          const std::string &libraryPath,
                          const std::string &kernelsRoot, std::string &error);

/// Compiles a CUDA translation unit to a cubin for `arch` ("sm_90a",
/// "sm_100a") with nvcc (`$LOOM_NVCC`, else nvcc on PATH, else
/// /usr/local/cuda/bin/nvcc). `ptxasReport` receives nvcc's `-Xptxas -v`
/// output (registers, shared memory, spills).
bool compileCubin(const std::string &sourcePath, const std::string &cubinPath,
                  const std::string &arch, const std::string &kernelsRoot,
                  std::string &ptxasReport, std::string &error);

/// Compiles a HIP translation unit to an AMD code object (hsaco) for `arch`
/// ("gfx950") with clang alone, no ROCm: `$LOOM_HIP_CLANG`, else clang++-22
/// on PATH, else /usr/lib/llvm-22/bin/clang++, with `-x hip -nogpuinc
/// -nogpulib --cuda-device-only --no-gpu-bundle-output` against the
/// project's own device header. `$LOOM_HIP_FLAGS` adds flags.
/// `resourceReport` receives the backend's kernel-resource-usage remarks
/// (VGPRs, AGPRs, SGPRs, scratch, occupancy, LDS), like ptxas -v for CUDA.
bool compileHsaco(const std::string &sourcePath, const std::string &hsacoPath,
                  const std::string &arch, const std::string &kernelsRoot,
                  std::string &resourceReport, std::string &error);

/// The variables whose flags the compiles above add: LOOM_HOST_CXXFLAGS
/// (every artifact's host library), LOOM_NVCC_FLAGS, LOOM_HIP_FLAGS.
constexpr const char *kHostFlagsVariable = "LOOM_HOST_CXXFLAGS";
constexpr const char *kNvccFlagsVariable = "LOOM_NVCC_FLAGS";
constexpr const char *kHipFlagsVariable = "LOOM_HIP_FLAGS";

/// The flags `variable` adds now, space-separated (none when it is unset).
std::vector<std::string> extraFlags(const char *variable);

} // namespace loom

#endif // LOOM_TOOLS_LOOMC_TOOLCHAIN_H
