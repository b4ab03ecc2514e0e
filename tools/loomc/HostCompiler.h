//===- HostCompiler.h - Build a host program library -------------*- C++ -*-===//
#ifndef LOOM_TOOLS_LOOMC_HOSTCOMPILER_H
#define LOOM_TOOLS_LOOMC_HOSTCOMPILER_H

#include <string>

namespace loom {

/// Compiles an emitted host program (C++ source in `sourcePath`) into the
/// shared library `libraryPath` with the system C++ compiler (`$CXX`, else
/// `c++`), against the task bodies under `kernelsRoot` (the directory that
/// holds kernels/). `$LOOM_HOST_CXXFLAGS` adds flags, space-separated (e.g.
/// -fsanitize=thread). On failure returns false and sets `error`, with the
/// compiler's output.
bool compileHostProgram(const std::string &sourcePath,
                        const std::string &libraryPath,
                        const std::string &kernelsRoot, std::string &error);

} // namespace loom

#endif // LOOM_TOOLS_LOOMC_HOSTCOMPILER_H
