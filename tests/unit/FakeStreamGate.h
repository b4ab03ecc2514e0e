//===- FakeStreamGate.h - A stream wait on a host word, faked ---*- C++ -*-===//
//
// What the fake CUDA driver's cuStreamWaitValue32 and the fake HIP runtime's
// hipStreamWaitValue32 put on a stream: the next launch there starts only
// once a 32-bit word (pinned host memory the runtime writes) reaches a value,
// and events recorded behind the wait complete when it opens. CUDA compares
// with wrap-around ((int32_t)(*addr - value) >= 0), HIP plainly
// (*addr >= value).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TESTS_UNIT_FAKESTREAMGATE_H
#define LOOM_TESTS_UNIT_FAKESTREAMGATE_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

namespace loom::fake {

struct StreamGate {
  const uint32_t *addr = nullptr;
  uint32_t value = 0;
  bool wraps = false;
  std::atomic<bool> open{false};
  std::chrono::steady_clock::time_point opened; // valid once open

  bool satisfied() const {
    const uint32_t now = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
    return wraps ? static_cast<int32_t>(now - value) >= 0 : now >= value;
  }
  /// The GPU's queue polling the word until the wait is over.
  void waitOpen() {
    while (!satisfied())
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    opened = std::chrono::steady_clock::now();
    open = true;
  }
};

/// The wait on `addr` for `value`; null when the word is there already
/// (nothing to wait for).
inline std::shared_ptr<StreamGate> makeStreamGate(const uint32_t *addr,
                                                  uint32_t value, bool wraps) {
  auto gate = std::make_shared<StreamGate>();
  gate->addr = addr;
  gate->value = value;
  gate->wraps = wraps;
  if (gate->satisfied())
    return nullptr;
  return gate;
}

/// Calls `start(false)` now, or, behind a gate, `start(true)` on a thread of
/// its own once the gate opens: how a fake launch leaves the host's call.
template <typename Start>
void startBehind(std::shared_ptr<StreamGate> gate, Start start) {
  if (!gate)
    return start(false);
  std::thread([gate = std::move(gate), start] {
    gate->waitOpen();
    start(true);
  }).detach();
}

} // namespace loom::fake

#endif // LOOM_TESTS_UNIT_FAKESTREAMGATE_H
