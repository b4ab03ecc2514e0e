//===- HostLibrary.h - A host program shared library ------------*- C++ -*-===//
//
// A host program is a shared library that exports LOOM_HOST_PROGRAM_SYMBOL,
// a function returning its LoomProgramDesc. The library stays loaded while
// any program made from it lives: run_task is code inside it.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_HOSTLIBRARY_H
#define LOOM_RUNTIME_HOST_HOSTLIBRARY_H

#include "runtime/src/Error.h"

#include <memory>
#include <string>

namespace loom {
namespace rt {

class HostLibrary {
public:
  /// Opens `path`, finds the program symbol and checks its ABI version.
  /// Every message names the path (and the symbol, when it is missing).
  static Status open(const std::string &path,
                     std::shared_ptr<const HostLibrary> *out);
  ~HostLibrary();
  HostLibrary(const HostLibrary &) = delete;
  HostLibrary &operator=(const HostLibrary &) = delete;

  const LoomProgramDesc &desc() const { return *desc_; }
  /// LOOM_HOST_META_FAULT_SYMBOL, or null for programs that predate it.
  LoomGetMetaFaultFn metaFault() const { return metaFault_; }

private:
  HostLibrary(void *handle, const LoomProgramDesc *desc,
              LoomGetMetaFaultFn metaFault)
      : handle_(handle), desc_(desc), metaFault_(metaFault) {}
  void *handle_;
  const LoomProgramDesc *desc_;
  LoomGetMetaFaultFn metaFault_;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_HOSTLIBRARY_H
