//===- Spin.h - Polling with backoff ----------------------------*- C++ -*-===//
//
// Host workers may outnumber cores (8+ workers on a 2-core machine). A
// worker that only spun would keep the producer it waits for off the CPU, so
// polling backs off: a few pause instructions (short waits stay fast), then
// yields (give a runnable producer the core), then short sleeps (a long wait
// or a deadlock should not burn the machine until the watchdog fires).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_RUNTIME_HOST_SPIN_H
#define LOOM_RUNTIME_HOST_SPIN_H

#include <chrono>
#include <cstdint>
#include <thread>

namespace loom {
namespace rt {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class Backoff {
public:
  void pause() {
    if (polls_ < kPausePolls)
      cpuRelax();
    else if (polls_ < kYieldPolls)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(kSleepUs));
    ++polls_;
  }

  /// True once every kCheckEvery polls: time to look at the clock (reading
  /// it on every poll would cost more than the poll).
  bool due() const { return polls_ % kCheckEvery == 0; }

private:
  static constexpr uint64_t kPausePolls = 16;
  static constexpr uint64_t kYieldPolls = 4096;
  static constexpr int kSleepUs = 50;
  static constexpr uint64_t kCheckEvery = 64;
  uint64_t polls_ = 0;
};

} // namespace rt
} // namespace loom

#endif // LOOM_RUNTIME_HOST_SPIN_H
