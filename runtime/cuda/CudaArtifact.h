//===- CudaArtifact.h - A GPU program's host library ------------*- C++ -*-===//
//
// A GPU artifact is a host shared library exporting
// LOOM_DEVICE_PROGRAM_SYMBOL (kernels/common/DeviceAbi.h): the task table,
// the code object and how to launch it. The library stays loaded while a
// program made from it lives, so everything it points to stays valid.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_CUDA_CUDAARTIFACT_H
#define LOOM_RUNTIME_CUDA_CUDAARTIFACT_H

#include "kernels/common/DeviceAbi.h"
#include "runtime/src/Error.h"

#include <memory>
#include <string>

namespace loom {
namespace rt {
namespace cuda {

class CudaArtifact {
public:
  /// Opens `path`, finds the symbol, and checks the device and program ABI
  /// versions and the launch fields. Every message names the path.
  static Status open(const std::string &path,
                     std::shared_ptr<const CudaArtifact> *out);
  /// Checks an already loaded descriptor (what open() checks after dlsym).
  static Status check(const std::string &path, const LoomDeviceProgram &d);
  ~CudaArtifact();
  CudaArtifact(const CudaArtifact &) = delete;
  CudaArtifact &operator=(const CudaArtifact &) = delete;

  const std::string &path() const { return path_; }
  const LoomDeviceProgram &program() const { return *program_; }

private:
  CudaArtifact(std::string path, void *handle, const LoomDeviceProgram *p)
      : path_(std::move(path)), handle_(handle), program_(p) {}
  std::string path_;
  void *handle_;
  const LoomDeviceProgram *program_;
};

} // namespace cuda
} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_CUDA_CUDAARTIFACT_H
