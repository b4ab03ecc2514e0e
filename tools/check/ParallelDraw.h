//===- ParallelDraw.h - Random inputs drawn on all cores -------*- C++ -*-===//
//
// Realistic sizes draw billions of values (the 7e9 weights of a 32-layer
// 8B decoder, 4 x 134M inputs of KDA at T = 32768, H = 32), far too slow on
// one core. Draws are split into chunks; each chunk has its own generator,
// forked from the run's generator in chunk order before any thread starts,
// so a seed gives the same values for any number of threads. Threads come
// from the oracles' work sharing (tools/oracle/Parallel.h).
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_CHECK_PARALLELDRAW_H
#define LOOM_TOOLS_CHECK_PARALLELDRAW_H

#include "tools/check/CheckUtil.h"
#include "tools/oracle/Parallel.h"

#include <algorithm>
#include <vector>

namespace loom::check::detail {

/// Elements per chunk: large enough that forking costs nothing, small
/// enough to spread a single tensor over many threads.
constexpr int64_t kDrawChunk = int64_t(1) << 20;

/// One generator per chunk, forked from `rng` in chunk order.
inline std::vector<Rng> forkChunks(Rng &rng, int64_t chunks) {
  std::vector<Rng> out;
  out.reserve(size_t(chunks));
  for (int64_t c = 0; c < chunks; ++c)
    out.push_back(rng.fork(uint64_t(c)));
  return out;
}

/// fillNonZero in parallel: t[i] = draw(gen, i) rounded to t's type,
/// redrawn while it rounds to zero; chunk c draws from its own generator.
template <typename Draw>
void fillNonZeroParallel(HostTensor &t, Rng &rng, Draw draw) {
  const int64_t n = t.numel(), chunks = (n + kDrawChunk - 1) / kDrawChunk;
  std::vector<Rng> gens = forkChunks(rng, chunks);
  loom::oracle::parallelFor(chunks, [&](int64_t c) {
    Rng &gen = gens[size_t(c)];
    for (int64_t i = c * kDrawChunk, end = std::min(n, i + kDrawChunk);
         i < end; ++i) {
      for (int tries = 0;; ++tries) {
        t.set(i, draw(gen, i));
        if (t.get(i) != 0.0 || tries > 16)
          break;
      }
    }
  });
}

} // namespace loom::check::detail

#endif // LOOM_TOOLS_CHECK_PARALLELDRAW_H
