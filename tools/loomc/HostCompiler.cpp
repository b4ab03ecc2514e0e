//===- HostCompiler.cpp - Build a host program library ---------------------===//
#include "tools/loomc/HostCompiler.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace llvm;

bool loom::compileHostProgram(const std::string &sourcePath,
                              const std::string &libraryPath,
                              const std::string &kernelsRoot,
                              std::string &error) {
  const char *cxxEnv = std::getenv("CXX");
  std::string name = cxxEnv && *cxxEnv ? cxxEnv : "c++";
  ErrorOr<std::string> cxx = sys::findProgramByName(name);
  if (!cxx) {
    error = "cannot find the C++ compiler '" + name +
            "' to build the host program (set CXX)";
    return false;
  }
  SmallString<128> log;
  if (std::error_code ec = sys::fs::createTemporaryFile("loomc-cxx", "log", log)) {
    error = "cannot create a temporary file: " + ec.message();
    return false;
  }
  std::string include = "-I" + kernelsRoot;
  SmallVector<StringRef> args = {*cxx,  "-std=c++17", "-O2",     "-fPIC",
                                 "-shared", "-fvisibility=hidden", include};
  // Extra flags, e.g. -fsanitize=thread for the TSan check of a program.
  SmallVector<StringRef> extra;
  if (const char *flags = std::getenv("LOOM_HOST_CXXFLAGS"))
    StringRef(flags).split(extra, ' ', -1, /*KeepEmpty=*/false);
  args.append(extra.begin(), extra.end());
  args.append({sourcePath, "-o", libraryPath});
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string execError;
  int rc = sys::ExecuteAndWait(*cxx, args, std::nullopt, redirects, 0, 0,
                               &execError);
  if (rc != 0) {
    error = "the host C++ compiler failed (" +
            (execError.empty() ? "exit " + std::to_string(rc) : execError) +
            ") on " + sourcePath;
    if (auto text = MemoryBuffer::getFile(log))
      error += ":\n" + (*text)->getBuffer().take_front(4000).str();
  }
  sys::fs::remove(log);
  return rc == 0;
}
