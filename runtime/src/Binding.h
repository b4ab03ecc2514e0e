//===- Binding.h - Checking bindings against declarations ------*- C++ -*-===//
//
// A wrong shape is the cheapest bug to catch and the most expensive to find
// once a kernel has read past a buffer, so every binding is checked against
// the declared rank, static dims and dynamic bound before it is accepted.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_BINDING_H
#define LOOM_RUNTIME_SRC_BINDING_H

#include "runtime/src/Allocations.h"
#include "runtime/src/ProgramTable.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace loom {
namespace rt {

/// "f32[?<=16, 8]": element type and dims, a dynamic dim with its bound.
std::string formatShape(const LoomBufferDesc &buffer);

/// Checks binding `data` with `dims` (`rank` entries; null: the declared
/// static dims) to buffer `index` of `table`, and fills `out`.
Status checkBinding(const ProgramTable &table, int32_t index, void *data,
                    const int64_t *dims, int32_t rank, LoomBinding *out);

/// Bytes of buffer `buffer` with dynamic dims at their bound; fails on
/// overflow.
Status boundBytes(const ProgramTable &table, int32_t index, size_t *bytes);

/// Bytes `binding` (of a buffer described by `desc`) spans: its element
/// size times its dims.
uint64_t bindingBytes(const LoomBufferDesc &desc, const LoomBinding &binding);

/// How messages name a launch: "launch 3", or "launch on a stream" for one
/// the kernel numbers itself (epoch 0: loomrt_launch_on_stream).
std::string launchName(uint64_t epoch);

/// Checks a launch's bindings: memory from loomrt_malloc must hold the bound
/// dims; any other pointer must be known to the vendor runtime
/// (`unknownPointer` returns "" when it is, else why not). Bindings that
/// passed are not checked again until they or the allocations change.
/// LOOMRT_ERROR_BINDING:
///   program 'p' launch 2: buffer 'x' (index 0, i64[7]) bound to 0x… with
///   dims [7] (56 bytes) runs past the end of its allocation (32 bytes from
///   0x…)
class DeviceBindingChecker {
public:
  Status check(const ProgramTable &table, uint64_t epoch,
               const LoomBinding *bindings,
               const DeviceAllocations &allocations,
               const std::function<std::string(const void *)> &unknownPointer,
               const char *runtimeName, const std::string &device);

  /// The bindings of the last launch that passed: those of the launch that
  /// ran last, which its reports name buffers from.
  const std::vector<LoomBinding> &checked() const { return checked_; }

private:
  std::vector<LoomBinding> checked_;
  uint64_t checkedGeneration_ = 0;
  bool valid_ = false;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_BINDING_H
