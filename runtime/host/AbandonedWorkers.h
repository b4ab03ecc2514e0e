//===- AbandonedWorkers.h - Memory that outlives abandoned workers -*- C++ -*-===//
//
// A worker thread stuck in a task body past the watchdog is abandoned: it is
// detached, not joined, and may still read the buffers bound to its launch
// when it resumes. Freeing those buffers then would be a use after free, so
// the host device frees through here: while any abandoned thread is still
// alive, frees are deferred, and the last such thread to leave returns them.
// (The program's own state, its workspace and its code are kept alive by the
// thread itself: LaunchState.)
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_ABANDONEDWORKERS_H
#define LOOM_RUNTIME_HOST_ABANDONEDWORKERS_H

#include <cstddef>
#include <mutex>
#include <vector>

namespace loom {
namespace rt {

class AbandonedWorkers {
public:
  /// The process's one instance, never destroyed (abandoned threads may
  /// outlive static destructors).
  static AbandonedWorkers &get();

  /// `threads` more threads were abandoned; each calls leave() as it exits.
  void add(size_t threads);
  /// One abandoned thread exits; the last one frees what was deferred.
  void leave();
  /// std::free(ptr) now, or once no abandoned thread is left.
  void free(void *ptr);

private:
  std::mutex mu_;
  size_t alive_ = 0;
  std::vector<void *> deferred_;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_ABANDONEDWORKERS_H
