//===- Allocations.cpp - What loomrt_malloc handed out --------------------===//
#include "runtime/src/Allocations.h"

namespace loom {
namespace rt {

void DeviceAllocations::track(uintptr_t base, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  allocations_[base] = bytes;
}

bool DeviceAllocations::untrack(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  if (allocations_.erase(base) == 0)
    return false;
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

bool DeviceAllocations::find(uintptr_t ptr, uintptr_t *base,
                             size_t *bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = allocations_.upper_bound(ptr);
  if (it == allocations_.begin())
    return false;
  --it;
  if (ptr >= it->first + it->second)
    return false;
  *base = it->first;
  *bytes = it->second;
  return true;
}

std::vector<uintptr_t> DeviceAllocations::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uintptr_t> out;
  for (const auto &a : allocations_)
    out.push_back(a.first);
  return out;
}

} // namespace rt
} // namespace loom
