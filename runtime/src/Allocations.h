//===- Allocations.h - What loomrt_malloc handed out -----------*- C++ -*-===//
//
// Every backend's record of its allocations, one implementation.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_SRC_ALLOCATIONS_H
#define LOOM_RUNTIME_SRC_ALLOCATIONS_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace loom {
namespace rt {

/// What loomrt_malloc handed out on one device (addresses as integers):
/// so a stray free is an error, a copy past an allocation's end is refused,
/// and (GPU backends, kept with the device's shared state) a program can
/// check that a binding fits inside its allocation.
class DeviceAllocations {
public:
  void track(uintptr_t base, size_t bytes);
  /// False if `base` is not a live allocation.
  bool untrack(uintptr_t base);
  /// The allocation holding `ptr`, if loomrt_malloc made it.
  bool find(uintptr_t ptr, uintptr_t *base, size_t *bytes) const;
  std::vector<uintptr_t> live() const;
  /// Bumped by every free: a binding checked before may now dangle.
  uint64_t generation() const {
    return generation_.load(std::memory_order_acquire);
  }

private:
  mutable std::mutex mu_;
  std::map<uintptr_t, size_t> allocations_;
  std::atomic<uint64_t> generation_{0};
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_SRC_ALLOCATIONS_H
