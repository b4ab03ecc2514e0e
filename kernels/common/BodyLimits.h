//===- BodyLimits.h - The largest shapes the task bodies run -----*- C++ -*-===//
//
// The one home of the shape limits the bodies have (the host bodies' fixed
// stack scratch): the bodies read them, and loomc rejects a spec (with its
// file:line:col) or an op (a verifier diagnostic) beyond them, so a shape
// that compiles is one every target can run.
//
// Free of any toolkit: plain C++, usable by the compiler and every target.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_BODYLIMITS_H
#define LOOM_KERNELS_COMMON_BODYLIMITS_H

#include <cstdint>

namespace loom {

/// mla_decode: heads, latent (ckv) dims and rope (kpe) dims. The shapes in
/// use are H in {8, 16, 128}, Dc = 512, Dp = 64.
constexpr int64_t kMlaMaxHeads = 256;
constexpr int64_t kMlaMaxDimCkv = 1024;
constexpr int64_t kMlaMaxDimKpe = 256;

/// kda_prefill: the largest chunk (the op uses 64 or 16).
constexpr int64_t kKdaMaxChunk = 64;

} // namespace loom

#endif // LOOM_KERNELS_COMMON_BODYLIMITS_H
