//===- AbandonedWorkers.cpp - Memory that outlives abandoned workers ------===//

#include "runtime/host/AbandonedWorkers.h"

#include <cstdlib>

namespace loom {
namespace rt {

AbandonedWorkers &AbandonedWorkers::get() {
  static AbandonedWorkers *instance = new AbandonedWorkers();
  return *instance;
}

void AbandonedWorkers::add(size_t threads) {
  std::lock_guard<std::mutex> lock(mu_);
  alive_ += threads;
}

void AbandonedWorkers::leave() {
  std::vector<void *> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--alive_ == 0)
      release.swap(deferred_);
  }
  for (void *ptr : release)
    std::free(ptr);
}

void AbandonedWorkers::free(void *ptr) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (alive_ != 0) {
      deferred_.push_back(ptr);
      return;
    }
  }
  std::free(ptr);
}

} // namespace rt
} // namespace loom
