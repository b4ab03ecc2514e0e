//===- Parallel.h - Deterministic work sharing for the oracles --*- C++ -*-===//
//
// The fp64 oracles are run on realistic sizes (a 36-layer decoder stack, KDA
// with T = 32768 and 32 heads) inside one 10-minute device call, so they use
// the host's cores. They stay deterministic: parallelFor hands out whole
// indices, each index is computed by exactly one thread and writes only its
// own outputs, and nothing is reduced across indices. The result is
// therefore bit-identical for every thread count (tests/unit/OracleTest.cpp
// checks that), and each output is computed by the same plain loop as in a
// serial run.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_ORACLE_PARALLEL_H
#define LOOM_TOOLS_ORACLE_PARALLEL_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::oracle {

/// Threads the oracles use: LOOM_ORACLE_THREADS when it is set to a number
/// >= 1, otherwise the CPUs this process may run on (its affinity mask).
int oracleThreads();

/// Calls f(i) once for every i in [0, n), from up to oracleThreads()
/// threads taking indices in order from a shared counter (so uneven work,
/// e.g. sequences of different lengths, spreads out). f(i) must write only
/// what belongs to index i. The first exception thrown by any f(i) is
/// rethrown here after every thread has stopped.
template <typename F> void parallelFor(int64_t n, F &&f) {
  int64_t threads = std::min<int64_t>(oracleThreads(), n);
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i)
      f(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex errorMutex;
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (!error)
          error = std::current_exception();
        next.store(n, std::memory_order_relaxed); // stop handing out work
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads - 1));
  for (int64_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  if (error)
    std::rethrow_exception(error);
}

} // namespace loom::oracle

#endif // LOOM_TOOLS_ORACLE_PARALLEL_H
