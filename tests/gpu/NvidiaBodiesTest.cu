//===- NvidiaBodiesTest.cu - Device task bodies vs host bodies, loop test -===//
//
// Standalone (no gtest): builds with nvcc alone on the GPU machine.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I<repo> \
//        tests/gpu/NvidiaBodiesTest.cu -o nvidia-bodies-test
//   ./nvidia-bodies-test            # LOOM_SEED=<n> reproduces a run
//   ./nvidia-bodies-test --filter kda   # one group: decoder, mla, kda,
//                                       # numerics, loop
//
// Part 1, bodies: for every device body, random non-zero inputs (the seed is
// printed), outputs and workspaces poisoned with NaN before each launch, the
// tiles of each phase run one per block in one launch (the tile arithmetic
// of targets/host/EmitHost.cpp, tiling parameters of passes/TaskModel.cpp
// for a 132-worker H200), and the results compared with the host bodies of
// kernels/host on the same inputs: elementwise |dev - ref| <= atol +
// rtol |ref|, relative RMS error, and NaN in exactly the same places (so
// nothing outside a body's region is written and nothing inside is
// missed). Intermediate workspaces (split-K partials, attention partials,
// KDA chunk slots) are compared too, so a layout slip shows where it is.
//
// Part 2, the persistent loop: a hand-built task table (a chain hopping
// across all blocks, a fan-out/fan-in diamond, a multi-event wait) run for
// 5 epochs without resetting the counters, static and dynamic mode, with a
// cooperative launch; then a planted deadlock (timeout), the host abort
// flag, and a failing body, each of which must come back with the status
// saying who waited on what.
//
// Prints one line per check and "N passed, M failed"; exits 1 on failure.
//
//===----------------------------------------------------------------------===//

#include "kernels/host/DecoderBodies.h"
#include "kernels/host/KdaBodies.h"
#include "kernels/host/MlaBodies.h"

#include "kernels/nvidia/Interpreter.cuh"
#include "tests/gpu/CudaSupport.cuh"
#include "kernels/nvidia/sm90/DecoderBodies.cuh"
#include "kernels/nvidia/sm90/KdaBodies.cuh"
#include "kernels/nvidia/sm90/MlaBodies.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

using loom::bf16;
using loom::f16;
namespace host = loom::host;
namespace sm90 = loom::sm90;
namespace lnv = loom::nvidia;

namespace {

constexpr int kThreads = 256;
constexpr int64_t kWorkers = 132; // H200: the tilings below assume it

using loom::cudatest::Dev;

//===----------------------------------------------------------------------===//
// Random inputs, poison, device buffers
//===----------------------------------------------------------------------===//

uint64_t gSeed;
std::mt19937_64 gRng;

float uni(float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(gRng);
}
int64_t irand(int64_t lo, int64_t hi) { // inclusive
  return std::uniform_int_distribution<int64_t>(lo, hi)(gRng);
}

template <typename T> T fromF(float v);
template <> bf16 fromF<bf16>(float v) { return loom::toBf16(v); }
template <> f16 fromF<f16>(float v) { return loom::toF16(v); }
template <> float fromF<float>(float v) { return v; }
template <typename T> float toF(T v) { return loom::toFloat(v); }

template <typename T> T poison();
template <> bf16 poison<bf16>() { return bf16{0x7fc0}; }
template <> f16 poison<f16>() { return f16{0x7e00}; }
template <> float poison<float>() {
  return std::numeric_limits<float>::quiet_NaN();
}

/// Non-zero values in [lo, hi) (|v| >= 1e-3 of the range).
template <typename T> std::vector<T> randVec(size_t n, float lo, float hi) {
  std::vector<T> v(n);
  const float tiny = 1e-3f * (hi - lo);
  for (auto &x : v) {
    float f;
    do
      f = uni(lo, hi);
    while (std::fabs(f) < tiny);
    x = fromF<T>(f);
  }
  return v;
}

template <typename T> std::vector<T> poisonVec(size_t n) {
  return std::vector<T>(n, poison<T>());
}


/// Runs fn(0..n) on all host cores: the host references are the slow part.
template <typename F> void parallelFor(int64_t n, const F &fn) {
  const int64_t threads =
      std::max<int64_t>(1, std::thread::hardware_concurrency());
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int64_t i = 0; i < std::min(threads, n); ++i)
    pool.emplace_back([&] {
      for (int64_t j; (j = next++) < n;)
        fn(j);
    });
  for (auto &t : pool)
    t.join();
}

int64_t gMaxSmem = 0; // sharedMemPerBlockOptin

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

int gPassed = 0, gFailed = 0;

void report(bool ok, const std::string &name, const std::string &detail) {
  (ok ? gPassed : gFailed)++;
  std::printf("[%s] %-44s %s\n", ok ? " OK " : "FAIL", name.c_str(),
              detail.c_str());
  std::fflush(stdout);
}

template <typename T> double rmsOf(const std::vector<T> &v) {
  double s = 0;
  size_t n = 0;
  for (const T &x : v) {
    double f = toF(x);
    if (!std::isnan(f)) {
      s += f * f;
      ++n;
    }
  }
  return n ? std::sqrt(s / double(n)) : 0.0;
}

/// Elementwise |d - r| <= atol + rtol |r| and relative RMS error <= rmsTol,
/// NaN in the same places.
template <typename T>
bool compare(const std::string &name, const std::vector<T> &dev,
             const std::vector<T> &ref, double atol, double rtol,
             double rmsTol = 1.0) {
  double maxAbs = 0, worst = 0, num = 0, den = 0;
  size_t nanMismatch = 0, firstBad = size_t(-1), compared = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = toF(dev[i]), r = toF(ref[i]);
    if (std::isnan(d) || std::isnan(r)) {
      if (std::isnan(d) != std::isnan(r)) {
        if (!nanMismatch++)
          firstBad = i;
      }
      continue;
    }
    if (std::isinf(d) || std::isinf(r)) { // e.g. lse = -inf: must match
      if (d != r && !nanMismatch++)
        firstBad = i;
      continue;
    }
    ++compared;
    const double e = std::fabs(d - r);
    maxAbs = std::max(maxAbs, e);
    const double ratio = e / (atol + rtol * std::fabs(r));
    if (ratio > worst) {
      worst = ratio;
      if (ratio > 1 && firstBad == size_t(-1))
        firstBad = i;
    }
    num += (d - r) * (d - r);
    den += r * r;
  }
  const double relRms = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  const bool ok =
      nanMismatch == 0 && worst <= 1.0 && relRms <= rmsTol && compared > 0;
  char buf[320];
  std::snprintf(
      buf, sizeof buf,
      "n=%zu max|err|=%.3g worst=%.3g relRMS=%.3g nan/inf mismatch=%zu",
      compared, maxAbs, worst, relRms, nanMismatch);
  std::string detail = buf;
  if (!ok && firstBad != size_t(-1)) {
    std::snprintf(buf, sizeof buf, " first bad [%zu]: dev=%g ref=%g", firstBad,
                  double(toF(dev[firstBad])), double(toF(ref[firstBad])));
    detail += buf;
  }
  report(ok, name, detail);
  return ok;
}

//===----------------------------------------------------------------------===//
// One tile per block, one launch per phase
//===----------------------------------------------------------------------===//

template <typename F>
__global__ void __launch_bounds__(kThreads, 1)
    tileKernel(F f, int32_t *status) {
  extern __shared__ __align__(128) char smem[];
  sm90::linearRingInit<kThreads>();
  const int32_t err = f(int64_t(blockIdx.x), smem);
  if (threadIdx.x == 0 && err != 0)
    atomicMax(status, err);
}

/// Runs tiles [0, tiles) of `f` with `smemBytes` of dynamic shared memory;
/// returns the largest status code a tile returned.
template <typename F>
int32_t runTiles(const F &f, int64_t tiles, int64_t smemBytes) {
  static int32_t *dStatus = [] {
    int32_t *p;
    CUDA_CHECK(cudaMalloc(&p, sizeof(int32_t)));
    return p;
  }();
  CUDA_CHECK(cudaMemset(dStatus, 0, sizeof(int32_t)));
  CUDA_CHECK(cudaFuncSetAttribute(tileKernel<F>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(smemBytes)));
  tileKernel<F><<<unsigned(tiles), kThreads, size_t(smemBytes)>>>(f, dStatus);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  int32_t status = 0;
  CUDA_CHECK(
      cudaMemcpy(&status, dStatus, sizeof status, cudaMemcpyDeviceToHost));
  return status;
}

void expectStatus(const std::string &name, int32_t got, int32_t want) {
  if (got != want)
    report(false, name + " status",
           "body returned " + std::to_string(got) + ", expected " +
               std::to_string(want));
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// partitionRows / partitionElements of TaskModel.cpp.
int64_t rowsPerTask(int64_t rows) { return ceilDiv(rows, kWorkers); }
int64_t elementsPerTask(int64_t n) {
  return std::max<int64_t>(256, roundUp(ceilDiv(n, kWorkers), 256));
}

//===----------------------------------------------------------------------===//
// rmsnorm
//===----------------------------------------------------------------------===//

struct RmsnormTile {
  const bf16 *x;
  const bf16 *w;
  bf16 *y;
  int64_t D, rows, per;
  float eps;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const int64_t r0 = tile * per, r1 = lnv::imin(rows, r0 + per);
    if (r0 >= r1)
      return 0;
    return sm90::rmsnormRows<kThreads>(x, w, y, D, eps, r0, r1, smem);
  }
};

void testRmsnorm(int64_t rows, int64_t D, bool inPlace) {
  const std::string name = "rmsnorm R=" + std::to_string(rows) +
                           " D=" + std::to_string(D) +
                           (inPlace ? " in-place" : "");
  auto x = randVec<bf16>(rows * D, -2, 2);
  auto w = randVec<bf16>(D, 0.5f, 1.5f);
  const float eps = 1e-5f;
  std::vector<bf16> ref = inPlace ? x : poisonVec<bf16>(rows * D);
  host::rmsnormRows(x.data(), w.data(), ref.data(), D, eps, 0, rows);
  Dev<bf16> dx(x), dw(w), dy(poisonVec<bf16>(rows * D));
  const int64_t per = rowsPerTask(rows);
  RmsnormTile f{dx.p, dw.p, inPlace ? dx.p : dy.p, D, rows, per, eps};
  expectStatus(
      name, runTiles(f, ceilDiv(rows, per), sm90::rmsnormSmemBytes<kThreads>()),
      0);
  compare(name, inPlace ? dx.get() : dy.get(), ref, 1e-2, 1e-2);
}

//===----------------------------------------------------------------------===//
// linear
//===----------------------------------------------------------------------===//

template <typename TIn> struct LinearTileF {
  const TIn *x;
  const bf16 *w;
  const bf16 *residual;
  bf16 *y;
  int64_t M, K, N, nTile;
  bool preload; // as the engine does for a task that waits
  int64_t blocks; // > 0: block b runs tiles b, b + blocks, ... (a worker)
  const TIn *norm = nullptr; // not null: linearNormTile with it and eps
  float eps = 0.f;
  __device__ int32_t operator()(int64_t block, char *smem) const {
    const int64_t tiles = lnv::ceilDiv(N, nTile);
    int32_t err = 0;
    for (int64_t tile = block, i = 0; tile < tiles && err == 0;
         tile += blocks > 0 ? blocks : tiles, ++i) {
      const int64_t n0 = tile * nTile, n1 = lnv::imin(N, n0 + nTile);
      // A worker's tasks alternate: preloaded, then not.
      const bool preloaded =
          preload && (blocks == 0 || i % 2 == 0) &&
          sm90::linearPreload<kThreads>(x, w, M, K, n0, n1, 0, K, smem);
      __syncthreads(); // the engine's wait
      err = norm ? sm90::linearNormTile<kThreads>(x, norm, eps, w, residual,
                                                  y, M, K, N, n0, n1, smem,
                                                  preloaded)
                 : sm90::linearTile<kThreads>(x, w, residual, y, M, K, N, n0,
                                              n1, smem, preloaded);
      __syncthreads(); // the engine's barrier after a body
    }
    return err;
  }
};

struct LinearPartialF {
  const bf16 *x;
  const bf16 *w;
  float *scratch;
  int64_t M, maxM, K, N, nTile, splits;
  bool preload;
  int64_t blocks; // as LinearTileF's
  const bf16 *norm; // as LinearTileF's
  float eps;
  __device__ int32_t operator()(int64_t block, char *smem) const {
    const int64_t tiles = lnv::ceilDiv(N, nTile) * splits;
    int32_t err = 0;
    for (int64_t tile = block, i = 0; tile < tiles && err == 0;
         tile += blocks > 0 ? blocks : tiles, ++i) {
      const int64_t nt = tile / splits, s = tile % splits;
      const int64_t n0 = nt * nTile, n1 = lnv::imin(N, n0 + nTile);
      const int64_t kPer = (K + splits - 1) / splits;
      const int64_t k0 = s * kPer, k1 = lnv::imin(K, k0 + kPer);
      const bool preloaded =
          preload && (blocks == 0 || i % 2 == 0) &&
          sm90::linearPreload<kThreads>(x, w, M, K, n0, n1, k0, k1, smem);
      __syncthreads();
      float *part = scratch + s * maxM * N;
      err = norm ? sm90::linearNormPartial<kThreads>(x, norm, eps, w, part, M,
                                                     K, N, n0, n1, k0, k1,
                                                     smem, preloaded)
                 : sm90::linearPartial<kThreads>(x, w, part, M, K, N, n0, n1,
                                                 k0, k1, smem, preloaded);
      __syncthreads();
    }
    return err;
  }
};

struct LinearReduceF {
  const float *scratch;
  const bf16 *residual;
  bf16 *y;
  int64_t M, maxM, N, nTile, splits;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const int64_t n0 = tile * nTile, n1 = lnv::imin(N, n0 + nTile);
    return sm90::linearReduce<kThreads, bf16>(scratch, splits, maxM * N,
                                              residual, y, M, N, n0, n1, smem);
  }
};

/// nTile / splits as partitionLinear chooses them (unless forced); preload:
/// each tile first issues what linearPreload issues; blocks > 0: that many
/// blocks run all tiles in turn, as workers do (the ring's barriers carry
/// their phases from task to task), preloading every other one. norm: x's
/// rows RMS-normalised (linearNormTile / linearNormPartial, against the
/// host's), with the scale `normOffset` elements into its buffer (1: not
/// 16-byte aligned).
void testLinear(int64_t M, int64_t K, int64_t N, bool residual,
                int64_t forceNTile = 0, int64_t smem = -1,
                bool preload = false, int64_t blocks = 0, bool norm = false,
                int64_t normOffset = 0) {
  if (smem < 0)
    smem = sm90::linearSmemBytes<kThreads>();
  int64_t nTile =
      std::clamp<int64_t>(roundUp(ceilDiv(N, kWorkers), 16), 16, 512);
  if (forceNTile)
    nTile = forceNTile;
  const int64_t nTiles = ceilDiv(N, nTile);
  int64_t splits = 1;
  if (2 * nTiles < kWorkers && K >= 512)
    splits = std::max<int64_t>(1, std::min(kWorkers / nTiles, K / 256));
  const int64_t maxM = std::max<int64_t>(M, 32);
  char nameBuf[160];
  std::snprintf(nameBuf, sizeof nameBuf,
                "linear M=%lld K=%lld N=%lld nTile=%lld splits=%lld%s "
                "smem=%lld%s blocks=%lld%s",
                (long long)M, (long long)K, (long long)N, (long long)nTile,
                (long long)splits, residual ? " +res" : "", (long long)smem,
                preload ? " preloaded" : "", (long long)blocks,
                norm ? (normOffset ? " norm(unaligned)" : " norm") : "");
  const std::string name = nameBuf;

  const float ws = 1.0f / std::sqrt(float(K));
  auto x = randVec<bf16>(maxM * K, -1, 1);
  auto w = randVec<bf16>(N * K, -ws, ws);
  auto res = randVec<bf16>(maxM * N, -1, 1);
  const bf16 *resH = residual ? res.data() : nullptr;
  Dev<bf16> dx(x), dw(w), dres(res), dy(poisonVec<bf16>(maxM * N));
  const bf16 *resD = residual ? dres.p : nullptr;
  std::vector<bf16> ref = poisonVec<bf16>(maxM * N);
  auto g = randVec<bf16>(K + normOffset, 0.5f, 1.5f);
  Dev<bf16> dg(g);
  const bf16 *gH = norm ? g.data() + normOffset : nullptr;
  const bf16 *gD = norm ? dg.p + normOffset : nullptr;
  const float eps = 1e-5f;

  if (splits == 1) {
    parallelFor(ceilDiv(N, 64), [&](int64_t c) {
      host::linearNormTile(x.data(), gH, eps, w.data(), resH, ref.data(), M, K,
                           N, c * 64, std::min<int64_t>(N, c * 64 + 64));
    });
    LinearTileF<bf16> f{dx.p,  dw.p,    resD,   dy.p, M,  K,  N,
                        nTile, preload, blocks, gD,   eps};
    expectStatus(name, runTiles(f, blocks > 0 ? blocks : nTiles, smem), 0);
    compare(name, dy.get(), ref, 2e-2, 1e-2);
    return;
  }
  const int64_t kPer = ceilDiv(K, splits);
  std::vector<float> refScratch =
      poisonVec<float>(host::linearSplitKWorkspaceFloats(maxM, N, splits));
  parallelFor(splits, [&](int64_t s) {
    host::linearNormPartial(x.data(), gH, eps, w.data(),
                            refScratch.data() + s * maxM * N, M, K, N, 0, N,
                            s * kPer, std::min<int64_t>(K, s * kPer + kPer));
  });
  host::linearReduce(refScratch.data(), splits, maxM * N, resH, ref.data(), M,
                     N, 0, N);
  Dev<float> dScratch(poisonVec<float>(refScratch.size()));
  LinearPartialF f0{dx.p,  dw.p,   dScratch.p, M,       maxM,   K,  N,
                    nTile, splits, preload,    blocks,  gD,     eps};
  expectStatus(name,
               runTiles(f0, blocks > 0 ? blocks : nTiles * splits, smem), 0);
  compare(name + " partials", dScratch.get(), refScratch, 1e-3, 1e-3);
  LinearReduceF f1{dScratch.p, resD, dy.p, M, maxM, N, nTile, splits};
  expectStatus(name, runTiles(f1, nTiles, 0), 0);
  compare(name, dy.get(), ref, 2e-2, 1e-2);
}

/// Unaligned K (the plain path), x in float.
void testLinearGeneric() {
  const int64_t M = 3, K = 1001, N = 64, nTile = 16;
  const std::string name = "linear generic M=3 K=1001 N=64 x=f32";
  auto x = randVec<float>(M * K, -1, 1);
  auto w = randVec<bf16>(N * K, -0.05f, 0.05f);
  std::vector<bf16> ref = poisonVec<bf16>(M * N);
  host::linearTile(x.data(), w.data(), static_cast<const bf16 *>(nullptr),
                   ref.data(), M, K, N, 0, N);
  Dev<float> dx(x);
  Dev<bf16> dw(w), dy(poisonVec<bf16>(M * N));
  LinearTileF<float> f{dx.p, dw.p, nullptr, dy.p, M, K, N, nTile, true, 0};
  expectStatus(name, runTiles(f, N / nTile, sm90::linearSmemBytes<kThreads>()),
               0);
  compare(name, dy.get(), ref, 2e-2, 1e-2);
}

//===----------------------------------------------------------------------===//
// rope, kv_append
//===----------------------------------------------------------------------===//

struct RopeTile {
  const bf16 *x;
  const int32_t *pos;
  bf16 *y;
  int64_t H, D, rot, rows, per;
  float theta;
  loom::RopeScaling scaling;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const int64_t r0 = tile * per, r1 = lnv::imin(rows, r0 + per);
    if (r0 >= r1)
      return 0;
    return sm90::rope<kThreads>(x, pos, y, H, D, rot, theta, scaling, r0, r1,
                                smem);
  }
};

void testRope(int64_t T, int64_t H, int64_t D, int64_t rot, bool inPlace,
              int64_t forcePer = 0, bool noSmem = false, bool llama31 = false) {
  char nameBuf[128];
  std::snprintf(nameBuf, sizeof nameBuf,
                "rope T=%lld H=%lld D=%lld rot=%lld%s%s%s", (long long)T,
                (long long)H, (long long)D, (long long)rot,
                inPlace ? " in-place" : "", noSmem ? " no-smem" : "",
                llama31 ? " llama3.1-scaled" : "");
  const loom::RopeScaling scaling =
      llama31 ? loom::RopeScaling{8, 1, 4, 8192} : loom::RopeScaling{};
  const std::string name = nameBuf;
  const int64_t rows = T * H;
  auto x = randVec<bf16>(rows * D, -2, 2);
  std::vector<int32_t> pos(T);
  for (auto &p : pos)
    p = int32_t(irand(0, 131071));
  const float theta = 500000.f;
  std::vector<bf16> ref = inPlace ? x : poisonVec<bf16>(rows * D);
  host::rope(x.data(), pos.data(), ref.data(), H, D, rot, theta, scaling, 0,
             rows);
  Dev<bf16> dx(x), dy(poisonVec<bf16>(rows * D));
  Dev<int32_t> dpos(pos);
  const int64_t per = forcePer ? forcePer : rowsPerTask(rows);
  RopeTile f{dx.p,  dpos.p, inPlace ? dx.p : dy.p, H, D, rot, rows, per,
             theta, scaling};
  expectStatus(name,
               runTiles(f, ceilDiv(rows, per),
                        noSmem ? 0 : sm90::ropeSmemBytes<kThreads>()),
               0);
  compare(name, inPlace ? dx.get() : dy.get(), ref, 1e-2, 1e-2);
}

struct KvAppendTile {
  const bf16 *k;
  const bf16 *v;
  const int32_t *slots;
  bf16 *kc;
  bf16 *vc;
  int64_t Hkv, D, Dv, P, pages, T;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    return sm90::kvAppend<kThreads>(k, v, slots, kc, vc, Hkv, D, Dv, P, pages,
                                    tile, lnv::imin(T, tile + 1), smem);
  }
};

void testKvAppend() {
  const int64_t T = 32, Hkv = 8, D = 128, Dv = 128, P = 16, pages = 64;
  const std::string name = "kv_append T=32 Hkv=8 D=128 P=16";
  auto k = randVec<bf16>(T * Hkv * D, -1, 1);
  auto v = randVec<bf16>(T * Hkv * Dv, -1, 1);
  std::vector<int32_t> all(pages * P);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), gRng);
  std::vector<int32_t> slots(all.begin(), all.begin() + T);
  slots[3] = slots[17] = -1; // padding tokens
  auto kc = poisonVec<bf16>(pages * P * Hkv * D);
  auto vc = poisonVec<bf16>(pages * P * Hkv * Dv);
  Dev<bf16> dk(k), dv(v), dkc(kc), dvc(vc);
  Dev<int32_t> ds(slots);
  host::kvAppend(k.data(), v.data(), slots.data(), kc.data(), vc.data(), Hkv, D,
                 Dv, P, pages, 0, T);
  KvAppendTile f{dk.p, dv.p, ds.p, dkc.p, dvc.p, Hkv, D, Dv, P, pages, T};
  expectStatus(name, runTiles(f, T, 0), 0);
  compare(name + " k_cache", dkc.get(), kc, 0, 0);
  compare(name + " v_cache", dvc.get(), vc, 0, 0);
}

//===----------------------------------------------------------------------===//
// Paged layouts (gqa, mla)
//===----------------------------------------------------------------------===//

/// Request b's pages are kv_indices[indptr[b] .. indptr[b+1]), scattered
/// over numPages (some never used).
struct Paged {
  std::vector<int32_t> lens, indptr, indices;
  int64_t numPages = 0;
};

Paged makePaged(const std::vector<int32_t> &lens, int64_t P) {
  Paged pg;
  pg.lens = lens;
  pg.indptr.push_back(0);
  int64_t total = 0;
  for (int32_t l : lens) {
    total += ceilDiv(l, P);
    pg.indptr.push_back(int32_t(total));
  }
  pg.numPages = total + 7;
  std::vector<int32_t> ids(pg.numPages);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), gRng);
  pg.indices.assign(ids.begin(), ids.begin() + total);
  if (pg.indices.empty())
    pg.indices.push_back(0);
  return pg;
}

/// A [numPages, P, rowElems] cache: random where a token lives, NaN in the
/// unused tail of last pages and in unused pages.
template <typename T>
std::vector<T> makeCache(const Paged &pg, int64_t P, int64_t rowElems) {
  std::vector<T> c = poisonVec<T>(pg.numPages * P * rowElems);
  for (size_t b = 0; b < pg.lens.size(); ++b)
    for (int64_t t = 0; t < pg.lens[b]; ++t) {
      const int64_t row = int64_t(pg.indices[pg.indptr[b] + t / P]) * P + t % P;
      for (int64_t i = 0; i < rowElems; ++i)
        c[row * rowElems + i] = fromF<T>(uni(-1, 1));
    }
  return c;
}

//===----------------------------------------------------------------------===//
// gqa_decode
//===----------------------------------------------------------------------===//

/// Tile t is split task t: the emitted code's (b, hk, s) decomposition of it,
/// which the body recombines before mapping it to work at run time.
struct GqaSplitTile {
  const bf16 *q;
  const bf16 *kc;
  const bf16 *vc;
  const int32_t *indptr, *indices, *lens;
  float *ws;
  int64_t batch, maxB, Hq, Hkv, D, Dv, P, pages, numIndices, S;
  float scale;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const int64_t pair = tile / S, s = tile % S;
    return sm90::gqaDecodeSplit<kThreads>(
        q, kc, vc, indptr, indices, lens, ws, batch, maxB, Hq, Hkv, D, Dv, P,
        pages, numIndices, S, scale, pair / Hkv, pair % Hkv, s, smem);
  }
};

/// One phase: split task t, then the pair's last split merges it into o.
struct GqaOnePhaseTile {
  GqaSplitTile split;
  bf16 *o;
  unsigned long long *arrivals;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const GqaSplitTile &f = split;
    const int64_t pair = tile / f.S, s = tile % f.S;
    return sm90::gqaDecode<kThreads>(
        f.q, f.kc, f.vc, f.indptr, f.indices, f.lens, f.ws, f.batch, f.maxB,
        f.Hq, f.Hkv, f.D, f.Dv, f.P, f.pages, f.numIndices, f.S, f.scale,
        pair / f.Hkv, pair % f.Hkv, s, o, arrivals, smem);
  }
};

/// One phase with the split's preload first, which reads caches as they
/// were before this launch's kv_append (kcOld / vcOld: the split's own
/// caches but for the `appended` slots of `slots`), as a preload issued
/// before its wait may.
struct GqaPreloadedTile {
  GqaOnePhaseTile one;
  const bf16 *kcOld, *vcOld;
  const int32_t *slots;
  int64_t appended;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const GqaSplitTile &f = one.split;
    const int64_t pair = tile / f.S, s = tile % f.S;
    const bool preloaded = sm90::gqaDecodePreload<kThreads>(
        f.q, kcOld, vcOld, f.indptr, f.indices, f.lens, slots, appended,
        f.batch, f.maxB, f.Hkv, f.D, f.Dv, f.P, f.pages, f.numIndices, f.S,
        pair / f.Hkv, pair % f.Hkv, s, smem);
    __syncthreads(); // the engine's barrier after the wait
    return sm90::gqaDecode<kThreads>(
        f.q, f.kc, f.vc, f.indptr, f.indices, f.lens, f.ws, f.batch, f.maxB,
        f.Hq, f.Hkv, f.D, f.Dv, f.P, f.pages, f.numIndices, f.S, f.scale,
        pair / f.Hkv, pair % f.Hkv, s, one.o, one.arrivals, smem, preloaded);
  }
};

struct GqaMergeTile {
  const float *ws;
  const int32_t *lens;
  bf16 *o;
  int64_t batch, maxB, Hq, Hkv, Dv, S;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    return sm90::gqaDecodeMerge<kThreads>(ws, lens, o, batch, maxB, Hq, Hkv, Dv,
                                          S, tile / Hkv, tile % Hkv, smem);
  }
};

int64_t kernelSmem();

void testGqa(std::vector<int32_t> lens, int64_t maxB, int64_t Hq, int64_t Hkv,
             int64_t D, int64_t P) {
  const int64_t batch = int64_t(lens.size()), Dv = D;
  // The task model's split count (passes/TaskModel.cpp, partitionGqa).
  const int64_t S =
      std::clamp<int64_t>((kWorkers + maxB * Hkv - 1) / (maxB * Hkv), 1, 16);
  char nameBuf[160];
  std::snprintf(nameBuf, sizeof nameBuf,
                "gqa B=%lld/%lld Hq=%lld Hkv=%lld D=%lld P=%lld S=%lld",
                (long long)batch, (long long)maxB, (long long)Hq,
                (long long)Hkv, (long long)D, (long long)P, (long long)S);
  const std::string name = nameBuf;
  lens.resize(maxB, 0); // rows past the runtime batch: never read
  Paged pg = makePaged(lens, P);
  auto kc = makeCache<bf16>(pg, P, Hkv * D);
  auto vc = makeCache<bf16>(pg, P, Hkv * Dv);
  auto q = randVec<bf16>(maxB * Hq * D, -1, 1);
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t wsFloats = host::gqaWorkspaceFloats(maxB, S, Hq, Dv);
  std::vector<float> refWs = poisonVec<float>(wsFloats);
  std::vector<bf16> ref = poisonVec<bf16>(maxB * Hq * Dv);
  parallelFor(maxB * Hkv * S, [&](int64_t t) {
    const int64_t pair = t / S;
    host::gqaDecodeSplit(q.data(), kc.data(), vc.data(), pg.indptr.data(),
                         pg.indices.data(), lens.data(), refWs.data(), batch,
                         maxB, Hq, Hkv, D, Dv, P, pg.numPages,
                         int64_t(pg.indices.size()), S, scale, pair / Hkv,
                         pair % Hkv, t % S);
  });
  for (int64_t t = 0; t < maxB * Hkv; ++t)
    host::gqaDecodeMerge(refWs.data(), lens.data(), ref.data(), batch, maxB,
                         Hq, Hkv, Dv, S, t / Hkv, t % Hkv);

  Dev<bf16> dq(q), dkc(kc), dvc(vc), dout(poisonVec<bf16>(ref.size()));
  Dev<int32_t> dip(pg.indptr), dind(pg.indices), dlens(lens);
  Dev<float> dws(poisonVec<float>(wsFloats));
  GqaSplitTile f0{dq.p, dkc.p, dvc.p, dip.p, dind.p, dlens.p, dws.p, batch,
                  maxB, Hq, Hkv, D, Dv, P, pg.numPages,
                  int64_t(pg.indices.size()), S, scale};
  // The fast path (its own shared memory); at D = 64 and 128 the tensor-core
  // path with two stages a warp, then with all a kernel has (three or
  // four); at other D the staged path. The merges below read the last.
  std::vector<std::pair<int64_t, const char *>> splitRuns = {
      {sm90::gqaSplitSmemBytes<kThreads>(D), " partials"}};
  if (D == 64 || D == 128)
    splitRuns.push_back(
        {kThreads / 32 * 2 * sm90::detail::gqaMmaStageBytes(D),
         " partials mma 2 stages"});
  splitRuns.push_back(
      {kernelSmem(), D == 64 || D == 128 ? " partials mma" : " partials staged"});
  for (auto [splitSmem, what] : splitRuns) {
    dws.put(poisonVec<float>(wsFloats));
    expectStatus(name, runTiles(f0, maxB * Hkv * S, splitSmem), 0);
    compare(name + what, dws.get(), refWs, 1e-3, 1e-3);
  }
  {
    dout.put(poisonVec<bf16>(ref.size()));
    GqaMergeTile f1{dws.p, dlens.p, dout.p, batch, maxB, Hq, Hkv, Dv, S};
    expectStatus(name, runTiles(f1, maxB * Hkv, 0), 0);
    compare(name + " merge", dout.get(), ref, 1e-2, 1e-2);
  }
  // One phase (gqaDecode), three launches: the pairs' counters are never
  // reset, so each launch must find its last arrivals from what it sees.
  Dev<unsigned long long> arrivals(
      std::vector<unsigned long long>(size_t(maxB * Hkv), 0ull));
  GqaOnePhaseTile f2{f0, dout.p, arrivals.p};
  for (int launch = 1; launch <= 3; ++launch) {
    dws.put(poisonVec<float>(wsFloats));
    dout.put(poisonVec<bf16>(ref.size()));
    expectStatus(name, runTiles(f2, maxB * Hkv * S, kernelSmem()), 0);
    compare(name + " one phase, launch " + std::to_string(launch), dout.get(),
            ref, 1e-2, 1e-2);
  }

  // Preloaded: the launch appends each request's last token and, when there
  // is a second request, request 0's slot is one of request 1's older
  // tokens instead (a slot another request reads). The preload sees the
  // caches before the append, the body after: the appended rows must be the
  // new ones.
  std::vector<int32_t> slots(size_t(batch), -1);
  auto slotOf = [&](int64_t b, int64_t t) {
    return pg.indices[pg.indptr[b] + t / P] * int32_t(P) + int32_t(t % P);
  };
  for (int64_t b = 0; b < batch; ++b)
    if (lens[b] > 0)
      slots[b] = slotOf(b, lens[b] - 1);
  if (batch >= 2 && lens[1] >= 2)
    slots[0] = slotOf(1, lens[1] / 2);
  std::vector<bf16> kcNew = kc, vcNew = vc;
  for (int32_t slot : slots)
    for (int64_t i = 0; slot >= 0 && i < Hkv * D; ++i) {
      kcNew[slot * Hkv * D + i] = fromF<bf16>(uni(-1, 1));
      vcNew[slot * Hkv * Dv + i] = fromF<bf16>(uni(-1, 1));
    }
  std::vector<bf16> refNew = poisonVec<bf16>(maxB * Hq * Dv);
  parallelFor(maxB * Hkv * S, [&](int64_t t) {
    const int64_t pair = t / S;
    host::gqaDecodeSplit(q.data(), kcNew.data(), vcNew.data(),
                         pg.indptr.data(), pg.indices.data(), lens.data(),
                         refWs.data(), batch, maxB, Hq, Hkv, D, Dv, P,
                         pg.numPages, int64_t(pg.indices.size()), S, scale,
                         pair / Hkv, pair % Hkv, t % S);
  });
  for (int64_t t = 0; t < maxB * Hkv; ++t)
    host::gqaDecodeMerge(refWs.data(), lens.data(), refNew.data(), batch, maxB,
                         Hq, Hkv, Dv, S, t / Hkv, t % Hkv);
  Dev<bf16> dkcNew(kcNew), dvcNew(vcNew);
  Dev<int32_t> dslots(slots);
  GqaSplitTile fNew = f0;
  fNew.kc = dkcNew.p;
  fNew.vc = dvcNew.p;
  GqaPreloadedTile f3{{fNew, dout.p, arrivals.p}, dkc.p, dvc.p, dslots.p,
                      batch};
  for (int launch = 1; launch <= 2; ++launch) {
    dws.put(poisonVec<float>(wsFloats));
    dout.put(poisonVec<bf16>(ref.size()));
    expectStatus(name, runTiles(f3, maxB * Hkv * S, kernelSmem()), 0);
    compare(name + " preloaded, launch " + std::to_string(launch),
            dout.get(), refNew, 1e-2, 1e-2);
  }
}

//===----------------------------------------------------------------------===//
// mla_decode
//===----------------------------------------------------------------------===//

template <typename T> struct MlaSplitTile {
  sm90::MlaParams<T> p;
  int64_t slots;
  float *partialO, *partialLse;
  int64_t minSlotTokens;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    return sm90::mlaSplit<kThreads>(p, tile, slots, partialO, partialLse, smem,
                                    minSlotTokens);
  }
};

template <typename T> struct MlaMergeTile {
  sm90::MlaParams<T> p;
  int64_t merges, slots;
  const float *partialO, *partialLse;
  int64_t minSlotTokens;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    return sm90::mlaMerge<kThreads>(p, tile, merges, slots, partialO,
                                    partialLse, smem, minSlotTokens);
  }
};

/// One phase, what the emitted kernels call: the slots merge the requests
/// they share, counting arrivals in `arrivals` (max_batch counters).
template <typename T> struct MlaDecodeTile {
  sm90::MlaParams<T> p;
  int64_t slots;
  float *partialO, *partialLse;
  unsigned long long *arrivals;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    return sm90::mlaDecode<kThreads>(p, tile, slots, partialO, partialLse,
                                     arrivals, smem);
  }
};

/// minSlotTokens: the bodies' parameter (1 = every slot active, the most
/// pieces per request); mergeSmem: the merge's shared memory (0: the full
/// mlaMergeSmemBytes; less makes it recompute weights in chunks).
template <typename T>
void testMla(std::vector<int32_t> lens, int64_t maxB, int64_t H, int64_t Dc,
             int64_t Dp, int64_t P, const char *tag = "",
             int64_t minSlotTokens = sm90::kMlaMinSlotTokens,
             int64_t mergeSmem = 0) {
  const int64_t batch = int64_t(lens.size());
  const int64_t slots = kWorkers, merges = std::min(maxB, slots);
  int64_t total = 0;
  for (int32_t l : lens)
    total += l;
  char nameBuf[160];
  std::snprintf(nameBuf, sizeof nameBuf,
                "mla%s B=%lld/%lld H=%lld Dc=%lld P=%lld tok=%lld min=%lld "
                "E=%lld", tag, (long long)batch, (long long)maxB, (long long)H,
                (long long)Dc, (long long)P, (long long)total,
                (long long)minSlotTokens,
                (long long)sm90::mlaSlots(total, slots, minSlotTokens).active);
  const std::string name = nameBuf;
  std::vector<int32_t> lensFull = lens;
  lensFull.resize(maxB, 0);
  Paged pg = makePaged(lensFull, P);
  auto ckv = makeCache<T>(pg, P, Dc);
  auto kpe = makeCache<T>(pg, P, Dp);
  auto qn = randVec<T>(maxB * H * Dc, -1, 1);
  auto qp = randVec<T>(maxB * H * Dp, -1, 1);
  const float smScale = 1.0f / std::sqrt(float(Dc + Dp));
  const int64_t wsFloats = sm90::mlaWorkspaceFloats(slots, maxB, H, Dc);
  const int64_t oFloats = sm90::mlaPartialOFloats(slots, maxB, H, Dc);

  host::MlaParams<T> hp;
  hp.qNope = qn.data();
  hp.qPe = qp.data();
  hp.ckvCache = ckv.data();
  hp.kpeCache = kpe.data();
  hp.kvIndptr = pg.indptr.data();
  hp.kvIndices = pg.indices.data();
  hp.kvLens = lensFull.data();
  std::vector<T> refO = poisonVec<T>(maxB * H * Dc);
  std::vector<float> refLse = poisonVec<float>(maxB * H);
  std::vector<float> refWs = poisonVec<float>(wsFloats);
  hp.o = refO.data();
  hp.lse = refLse.data();
  hp.batch = batch;
  hp.numHeads = H;
  hp.dimCkv = Dc;
  hp.dimKpe = Dp;
  hp.pageSize = P;
  hp.numPages = pg.numPages;
  hp.numIndices = int64_t(pg.indices.size());
  hp.smScale = smScale;
  parallelFor(slots, [&](int64_t s) {
    host::mlaSplit(hp, s, slots, refWs.data(), refWs.data() + oFloats,
                   minSlotTokens);
  });
  for (int64_t m = 0; m < merges; ++m)
    host::mlaMerge(hp, m, merges, slots, refWs.data(), refWs.data() + oFloats,
                   minSlotTokens);

  Dev<T> dqn(qn), dqp(qp), dckv(ckv), dkpe(kpe),
      dout(poisonVec<T>(refO.size()));
  Dev<int32_t> dip(pg.indptr), dind(pg.indices), dlens(lensFull);
  Dev<float> dlse(poisonVec<float>(refLse.size())),
      dws(poisonVec<float>(wsFloats));
  sm90::MlaParams<T> dp = hp;
  dp.qNope = dqn.p;
  dp.qPe = dqp.p;
  dp.ckvCache = dckv.p;
  dp.kpeCache = dkpe.p;
  dp.kvIndptr = dip.p;
  dp.kvIndices = dind.p;
  dp.kvLens = dlens.p;
  dp.o = dout.p;
  dp.lse = dlse.p;
  const int64_t smemSplit = (Dc == 512 && Dp == 64)
                                ? sm90::mlaSplitSmemBytes<kThreads>()
                                : sm90::mlaSplitGenericSmemBytes(H, Dc, Dp);
  MlaSplitTile<T> f0{dp, slots, dws.p, dws.p + oFloats, minSlotTokens};
  expectStatus(name, runTiles(f0, slots, smemSplit), 0);
  auto ws = dws.get();
  std::vector<float> wsO(ws.begin(), ws.begin() + oFloats),
      refWsO(refWs.begin(), refWs.begin() + oFloats);
  std::vector<float> wsL(ws.begin() + oFloats, ws.end()),
      refWsL(refWs.begin() + oFloats, refWs.end());
  compare(name + " partial_o", wsO, refWsO, 2e-2 * rmsOf(refWsO), 1e-2, 1e-2);
  compare(name + " partial_lse", wsL, refWsL, 1e-3, 1e-4);
  MlaMergeTile<T> f1{dp, merges, slots, dws.p, dws.p + oFloats,
                     minSlotTokens};
  expectStatus(name,
               runTiles(f1, merges,
                        mergeSmem ? mergeSmem
                                  : sm90::mlaMergeSmemBytes(H, slots)),
               0);
  compare(name + " o", dout.get(), refO, 1e-2, 1e-2);
  compare(name + " lse", dlse.get(), refLse, 1e-3, 1e-4);

  // One phase, launched twice on fresh poison: the arrival counters carry
  // over from one launch to the next. All `slots` blocks must be resident
  // together (one per SM here, as in the persistent kernel).
  Dev<unsigned long long> arrivals(std::vector<unsigned long long>(maxB, 0));
  for (int launch = 0; launch < 2; ++launch) {
    Dev<T> dout1(poisonVec<T>(refO.size()));
    Dev<float> dlse1(poisonVec<float>(refLse.size())),
        dws1(poisonVec<float>(wsFloats));
    sm90::MlaParams<T> dp1 = dp;
    dp1.o = dout1.p;
    dp1.lse = dlse1.p;
    MlaDecodeTile<T> f2{dp1, slots, dws1.p, dws1.p + oFloats, arrivals.p};
    expectStatus(name + " one phase",
                 runTiles(f2, slots,
                          std::max(smemSplit, sm90::mlaMergeMinSmemBytes(H))),
                 0);
    compare(name + " one phase o", dout1.get(), refO, 1e-2, 1e-2);
    compare(name + " one phase lse", dlse1.get(), refLse, 1e-3, 1e-4);
  }
}

//===----------------------------------------------------------------------===//
// kda_prefill
//===----------------------------------------------------------------------===//
//
// Each case runs the bodies as the emitted kernel would (the dispatchers,
// with the chip's shared-memory budget: the fast tensor-core path where it
// applies) and, for shapes the fast path covers, the generic FFMA path too
// (kda*Generic, with its own shared-memory size). Both are compared with
// the host bodies (workspace, o, final state) and, for the fast path, with
// an fp64 per-token recurrence at the spec's bound: relative RMS <= 5e-3 on
// o and on the final state, and on o in every 512-token window.

/// Which entry a KDA tile calls.
enum class KdaPath { Dispatch, Generic };

template <typename T> struct KdaIntraTile {
  sm90::KdaParams<T> p;
  float *work;
  int64_t tasks;
  KdaPath path;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const int64_t H = p.numHeads;
    const int64_t chunks =
        sm90::kdaNumChunks(p.cuSeqlens, p.numSeqs, p.chunkSize);
    const int64_t items = chunks * H;
    int64_t i = tile * items / tasks;
    const int64_t end = (tile + 1) * items / tasks;
    while (i < end) {
      const int64_t head = i / chunks, c0 = i % chunks;
      const int64_t c1 = lnv::imin(chunks, c0 + (end - i));
      const int32_t err =
          path == KdaPath::Generic
              ? sm90::kdaIntraChunkGeneric<kThreads>(p, c0, c1, head, work,
                                                     smem)
              : sm90::kdaIntraChunk<kThreads>(p, c0, c1, head, work, smem);
      if (err)
        return err;
      i += c1 - c0;
    }
    return 0;
  }
};

template <typename T> struct KdaScanTile {
  sm90::KdaParams<T> p;
  const float *work;
  int64_t tasks, vBlocks;
  KdaPath path;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const int64_t H = p.numHeads, V = p.dimV;
    const int64_t items = p.numSeqs * H * vBlocks;
    for (int64_t i = tile; i < items; i += tasks) {
      const int64_t n = i / (H * vBlocks), head = (i / vBlocks) % H,
                    vb = i % vBlocks;
      const int64_t v0 = vb * V / vBlocks, v1 = (vb + 1) * V / vBlocks;
      const int32_t err =
          path == KdaPath::Generic
              ? sm90::kdaStateScanGeneric<kThreads>(p, n, head, v0, v1, work,
                                                    smem)
              : sm90::kdaStateScan<kThreads>(p, n, head, v0, v1, work, smem);
      if (err)
        return err;
    }
    return 0;
  }
};

/// partitionKda's V blocks for H heads on kWorkers workers.
int64_t kdaVBlocks(int64_t H, int64_t V) {
  int64_t vBlocks = 1;
  while (vBlocks * 2 * H <= kWorkers && vBlocks * 2 * 16 <= V)
    vBlocks *= 2;
  return vBlocks;
}

/// The dynamic shared memory the emitted kernel gets on this device
/// (targets/common: the chip's per-block budget less a 4 KiB reserve).
int64_t kernelSmem() { return gMaxSmem - 4096; }

struct KdaCase {
  std::vector<int32_t> seqLens;
  int64_t maxTokens, maxSeqs, H, K, V, C;
  host::KdaGate gate;
  bool l2norm, initState;
  bool smallSmem; // generic phase 0 through the workspace (global) path
  const char *tag;
  bool weakDecay = false; // gates near 0: long memory (the precision stress)
};

/// Random KDA inputs for one case, as the host bodies take them.
struct KdaInputs {
  std::vector<int32_t> cu;
  std::vector<bf16> q, k, v, g, beta;
  std::vector<float> aLog, dtBias, init;
};

KdaInputs kdaInputs(const KdaCase &kc) {
  KdaInputs in;
  const int64_t H = kc.H, K = kc.K, V = kc.V, Tbuf = kc.maxTokens;
  in.cu = {0};
  for (int32_t l : kc.seqLens)
    in.cu.push_back(in.cu.back() + l);
  const int64_t N = int64_t(kc.seqLens.size());
  // Without the L2 norm the delta rule is only stable for |k| <~ 1.
  const float qk = kc.l2norm ? 1.f : 1.5f / std::sqrt(float(K));
  in.q = randVec<bf16>(Tbuf * H * K, -qk, qk);
  in.k = randVec<bf16>(Tbuf * H * K, -qk, qk);
  in.v = randVec<bf16>(Tbuf * H * V, -1, 1);
  // Gates: a mix of near-zero decay and strong decay, beta near 0 and 1
  // (weakDecay: all near zero, so the state remembers thousands of tokens).
  in.g.resize(Tbuf * H * K);
  in.beta.resize(Tbuf * H);
  for (int64_t t = 0; t < Tbuf; ++t) {
    const bool strong = irand(0, 3) == 0;
    for (int64_t i = 0; i < H * K; ++i)
      in.g[t * H * K + i] = fromF<bf16>(kc.weakDecay ? uni(-12, -6)
                                        : strong     ? uni(0, 6)
                                                     : uni(-8, -1));
  }
  for (auto &b : in.beta)
    b = fromF<bf16>(uni(-6, 6));
  in.aLog.resize(H);
  in.dtBias.resize(H * K);
  for (auto &a : in.aLog)
    a = kc.weakDecay ? uni(-1, 0) : uni(-1, 1.5f);
  for (auto &d : in.dtBias)
    d = uni(-1, 1);
  in.init.resize(N * H * K * V);
  for (auto &s : in.init)
    s = uni(-0.5f, 0.5f);
  return in;
}

/// The per-token recurrence of DESIGN.md in fp64 (as tools/oracle does):
/// o [T, H, V] for the packed rows, final state [N, H, K, V].
void kdaOracle(const KdaCase &kc, const KdaInputs &in, float scale,
               std::vector<double> &o, std::vector<double> &state) {
  const int64_t H = kc.H, K = kc.K, V = kc.V;
  const int64_t N = int64_t(kc.seqLens.size());
  o.assign(size_t(in.cu.back()) * H * V, 0.0);
  state.assign(N * H * K * V, 0.0);
  parallelFor(N * H, [&](int64_t item) {
    const int64_t n = item / H, h = item % H;
    std::vector<double> S(K * V), q(K), k(K), dec(K), u(V);
    for (int64_t i = 0; i < K * V; ++i)
      S[i] = kc.initState ? in.init[item * K * V + i] : 0.0;
    const double a = std::exp(double(in.aLog[h]));
    for (int64_t t = in.cu[n]; t < in.cu[n + 1]; ++t) {
      const int64_t row = t * H + h;
      double qs = 0, ks = 0;
      for (int64_t c = 0; c < K; ++c) {
        q[c] = toF(in.q[row * K + c]);
        k[c] = toF(in.k[row * K + c]);
        qs += q[c] * q[c];
        ks += k[c] * k[c];
      }
      const double qn = kc.l2norm ? 1 / std::sqrt(qs + 1e-6) : 1.0;
      const double kn = kc.l2norm ? 1 / std::sqrt(ks + 1e-6) : 1.0;
      for (int64_t c = 0; c < K; ++c) {
        q[c] *= qn * scale;
        k[c] *= kn;
        const double x = double(toF(in.g[row * K + c])) + in.dtBias[h * K + c];
        const double gate =
            kc.gate == host::KdaGate::Bounded
                ? -5.0 / (1 + std::exp(-a * x))
                : -a * (x > 30 ? x : std::log1p(std::exp(x)));
        dec[c] = std::exp(gate);
      }
      const double beta = 1 / (1 + std::exp(-double(toF(in.beta[row]))));
      for (int64_t c = 0; c < K; ++c)
        for (int64_t j = 0; j < V; ++j)
          S[c * V + j] *= dec[c];
      for (int64_t j = 0; j < V; ++j) {
        double pred = 0;
        for (int64_t c = 0; c < K; ++c)
          pred += S[c * V + j] * k[c];
        u[j] = beta * (toF(in.v[row * V + j]) - pred);
      }
      for (int64_t c = 0; c < K; ++c)
        for (int64_t j = 0; j < V; ++j)
          S[c * V + j] += k[c] * u[j];
      for (int64_t j = 0; j < V; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < K; ++c)
          acc += S[c * V + j] * q[c];
        o[row * V + j] = acc;
      }
    }
    std::copy(S.begin(), S.end(), state.begin() + item * K * V);
  });
}

/// Relative RMS of dev against the fp64 reference over [b, e), NaN counting
/// as a failure.
template <typename D>
double kdaRelRms(const std::vector<D> &dev, const std::vector<double> &ref,
                 size_t b, size_t e) {
  double num = 0, den = 0;
  for (size_t i = b; i < e; ++i) {
    const double d = toF(dev[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::isnan(num) ? INFINITY : std::sqrt(num / std::max(den, 1e-300));
}

/// The spec's check: o and the final state against fp64, o also per
/// 512-token window (rows of the packed buffer).
void kdaCheckOracle(const std::string &name, const KdaCase &kc,
                    const std::vector<bf16> &o, const std::vector<float> &state,
                    const std::vector<double> &refO,
                    const std::vector<double> &refState) {
  const int64_t HV = kc.H * kc.V, T = int64_t(refO.size()) / HV;
  const double oErr = kdaRelRms(o, refO, 0, refO.size());
  const double sErr = kdaRelRms(state, refState, 0, refState.size());
  double worst = 0;
  int64_t worstAt = 0;
  for (int64_t t0 = 0; t0 < T; t0 += 512) {
    const double e = kdaRelRms(o, refO, size_t(t0 * HV),
                               size_t(std::min(T, t0 + 512) * HV));
    if (e > worst)
      worst = e, worstAt = t0;
  }
  constexpr double kBound = 5e-3; // DESIGN.md, KDA
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "o relRMS=%.3g, worst 512-window %.3g (tokens %lld..), "
                "final_state relRMS=%.3g (bound %.0e)",
                oErr, worst, (long long)worstAt, sErr, kBound);
  report(oErr <= kBound && worst <= kBound && sErr <= kBound,
         name + " vs fp64", buf);
}

void testKda(const KdaCase &kc) {
  using T = bf16;
  const int64_t H = kc.H, K = kc.K, V = kc.V, C = kc.C;
  const KdaInputs in = kdaInputs(kc);
  const std::vector<int32_t> &cu = in.cu;
  const int64_t N = int64_t(kc.seqLens.size()), T_ = cu.back();
  const int64_t Tbuf = kc.maxTokens;
  // partitionKda
  const int64_t vBlocks = kdaVBlocks(H, V);
  const int64_t intraTasks = 2 * kWorkers;
  const int64_t scanTasks = std::min(kc.maxSeqs * H * vBlocks, kWorkers);
  const int64_t maxChunks = host::kdaMaxChunks(kc.maxTokens, kc.maxSeqs, C);
  const bool fastShape = !kc.smallSmem && sm90::kdaIntraFastShape(C, K, V);
  char nameBuf[200];
  std::snprintf(nameBuf, sizeof nameBuf,
                "kda%s T=%lld N=%lld H=%lld K=%lld V=%lld C=%lld %s vB=%lld",
                kc.tag, (long long)T_, (long long)N, (long long)H,
                (long long)K, (long long)V, (long long)C,
                kc.gate == host::KdaGate::Bounded ? "bounded" : "unbounded",
                (long long)vBlocks);
  const std::string name = nameBuf;

  host::KdaParams<T> hp;
  hp.q = in.q.data();
  hp.k = in.k.data();
  hp.v = in.v.data();
  hp.g = in.g.data();
  hp.beta = in.beta.data();
  hp.aLog = in.aLog.data();
  hp.dtBias = in.dtBias.data();
  hp.cuSeqlens = cu.data();
  hp.initialState = kc.initState ? in.init.data() : nullptr;
  std::vector<T> refO = poisonVec<T>(Tbuf * H * V);
  std::vector<float> refState = poisonVec<float>(N * H * K * V);
  hp.o = refO.data();
  hp.finalState = refState.data();
  hp.numTokens = Tbuf;
  hp.numSeqs = N;
  hp.numHeads = H;
  hp.dimK = K;
  hp.dimV = V;
  hp.chunkSize = C;
  hp.gate = kc.gate;
  hp.lowerBound = -5.f;
  hp.scale = 1.0f / std::sqrt(float(K));
  hp.qkL2norm = kc.l2norm;
  hp.maxChunks = maxChunks;
  const int64_t wsFloats = host::kdaWorkspaceFloats(maxChunks, H, C, K, V);
  std::vector<float> refWs = poisonVec<float>(wsFloats);
  const int64_t chunks = host::kdaNumChunks(cu.data(), N, C);
  parallelFor(chunks * H, [&](int64_t i) {
    host::kdaIntraChunk(hp, i / H, i / H + 1, i % H, refWs.data());
  });
  parallelFor(N * H, [&](int64_t i) {
    host::kdaStateScan(hp, i / H, i % H, 0, V, refWs.data());
  });

  Dev<T> dq(in.q), dk(in.k), dv(in.v), dg(in.g), dbeta(in.beta),
      dout(poisonVec<T>(refO.size()));
  Dev<float> daLog(in.aLog), ddt(in.dtBias), dinit(in.init),
      dstate(poisonVec<float>(refState.size())),
      dws(poisonVec<float>(wsFloats));
  Dev<int32_t> dcu(cu);
  sm90::KdaParams<T> dp = hp;
  dp.q = dq.p;
  dp.k = dk.p;
  dp.v = dv.p;
  dp.g = dg.p;
  dp.beta = dbeta.p;
  dp.aLog = daLog.p;
  dp.dtBias = ddt.p;
  dp.cuSeqlens = dcu.p;
  dp.initialState = kc.initState ? dinit.p : nullptr;
  dp.o = dout.p;
  dp.finalState = dstate.p;
  const double oRms = rmsOf(refO), sRms = rmsOf(refState);

  std::vector<double> oracleO, oracleState;
  if (fastShape)
    kdaOracle(kc, in, hp.scale, oracleO, oracleState);

  // Runs both phases through `path` with the given shared memory and checks
  // the results against the host bodies.
  auto run = [&](const std::string &label, KdaPath path, int64_t smem0,
                 int64_t smem1) {
    const std::string nm = name + " (" + label + ")";
    dws.put(poisonVec<float>(wsFloats));
    dout.put(poisonVec<T>(refO.size()));
    dstate.put(poisonVec<float>(refState.size()));
    KdaIntraTile<T> f0{dp, dws.p, intraTasks, path};
    expectStatus(nm, runTiles(f0, intraTasks, smem0), 0);
    compare(nm + " workspace", dws.get(), refWs, 1e-3, 1e-2, 1e-3);
    KdaScanTile<T> f1{dp, dws.p, scanTasks, vBlocks, path};
    expectStatus(nm, runTiles(f1, scanTasks, smem1), 0);
    const std::vector<T> o = dout.get();
    const std::vector<float> st = dstate.get();
    compare(nm + " o", o, refO, 1e-2 * oRms, 1e-2, 5e-3);
    compare(nm + " final_state", st, refState, 1e-3 * sRms, 1e-3, 5e-3);
    if (path == KdaPath::Dispatch && fastShape)
      kdaCheckOracle(nm, kc, o, st, oracleO, oracleState);
  };
  if (fastShape) {
    run("fast", KdaPath::Dispatch, kernelSmem(), kernelSmem());
    if (T_ <= 4096) // the generic path's own check (the long cases time it)
      run("generic", KdaPath::Generic, sm90::kdaIntraSmemBytes(C, K, V),
          sm90::kdaScanSmemBytes(C, K));
  } else {
    // The workspace path when asked for, or when the chip has too little.
    int64_t smem0 = sm90::kdaIntraSmemBytes(C, K, V);
    const bool ws = kc.smallSmem || smem0 > kernelSmem();
    if (ws)
      smem0 = sm90::kdaIntraMinSmemBytes(C, K);
    run(ws ? "generic ws" : "generic", KdaPath::Dispatch, smem0,
        sm90::kdaScanSmemBytes(C, K));
  }
}

/// Median time of `reps` launches of `f` (after `warm` unmeasured ones).
template <typename F>
float medianMs(const F &f, int64_t tiles, int64_t smemBytes, int warm,
               int reps) {
  for (int i = 0; i < warm; ++i)
    expectStatus("kda timing", runTiles(f, tiles, smemBytes), 0);
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  static int32_t *dStatus = [] {
    int32_t *p;
    CUDA_CHECK(cudaMalloc(&p, sizeof(int32_t)));
    CUDA_CHECK(cudaMemset(p, 0, sizeof(int32_t)));
    return p;
  }();
  CUDA_CHECK(cudaFuncSetAttribute(tileKernel<F>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(smemBytes)));
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CUDA_CHECK(cudaEventRecord(e0));
    tileKernel<F><<<unsigned(tiles), kThreads, size_t(smemBytes)>>>(f,
                                                                   dStatus);
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// KDA body times at one sequence of T tokens, H heads, K = V = 128, C = 64:
/// the generic (FFMA) bodies against the dispatchers (fast path), per
/// phase, median of 20 launches after 2 warm-ups. One block per tile as in
/// the checks above (phase 0: 2 x 132 tiles, phase 1: H x V blocks).
void timeKda(int64_t T, int64_t H) {
  using Tp = bf16;
  const int64_t K = 128, V = 128, C = 64;
  KdaCase kc{{int32_t(T)}, T, 1, H, K, V, C, host::KdaGate::Unbounded,
             true, true, false, ""};
  const KdaInputs in = kdaInputs(kc);
  const int64_t maxChunks = host::kdaMaxChunks(T, 1, C);
  const int64_t wsFloats = host::kdaWorkspaceFloats(maxChunks, H, C, K, V);
  Dev<Tp> dq(in.q), dk(in.k), dv(in.v), dg(in.g), dbeta(in.beta),
      dout(poisonVec<Tp>(T * H * V));
  Dev<float> daLog(in.aLog), ddt(in.dtBias), dinit(in.init),
      dstate(H * K * V), dws(wsFloats);
  Dev<int32_t> dcu(in.cu);
  sm90::KdaParams<Tp> dp;
  dp.q = dq.p;
  dp.k = dk.p;
  dp.v = dv.p;
  dp.g = dg.p;
  dp.beta = dbeta.p;
  dp.aLog = daLog.p;
  dp.dtBias = ddt.p;
  dp.cuSeqlens = dcu.p;
  dp.initialState = dinit.p;
  dp.o = dout.p;
  dp.finalState = dstate.p;
  dp.numTokens = T;
  dp.numSeqs = 1;
  dp.numHeads = H;
  dp.dimK = K;
  dp.dimV = V;
  dp.chunkSize = C;
  dp.gate = host::KdaGate::Unbounded;
  dp.scale = 1.0f / std::sqrt(float(K));
  dp.qkL2norm = true;
  dp.maxChunks = maxChunks;
  const int64_t intraTasks = 2 * kWorkers, vB = kdaVBlocks(H, V);
  const int64_t scanTasks = std::min(H * vB, kWorkers);
  constexpr int kWarm = 2, kReps = 20;
  const float old0 =
      medianMs(KdaIntraTile<Tp>{dp, dws.p, intraTasks, KdaPath::Generic},
               intraTasks, sm90::kdaIntraSmemBytes(C, K, V), kWarm, kReps);
  const float new0 =
      medianMs(KdaIntraTile<Tp>{dp, dws.p, intraTasks, KdaPath::Dispatch},
               intraTasks, kernelSmem(), kWarm, kReps);
  const float old1 = medianMs(
      KdaScanTile<Tp>{dp, dws.p, scanTasks, vB, KdaPath::Generic}, scanTasks,
      sm90::kdaScanSmemBytes(C, K), kWarm, kReps);
  const float new1 = medianMs(
      KdaScanTile<Tp>{dp, dws.p, scanTasks, vB, KdaPath::Dispatch},
      scanTasks, kernelSmem(), kWarm, kReps);
  // Phase 1 with half as many, twice as wide V blocks, for the partition.
  const int64_t vB2 = std::max<int64_t>(1, vB / 2);
  const float new1Half = medianMs(
      KdaScanTile<Tp>{dp, dws.p, std::min(H * vB2, kWorkers), vB2,
                      KdaPath::Dispatch},
      std::min(H * vB2, kWorkers), kernelSmem(), kWarm, kReps);
  std::printf("[TIME] kda T=%lld H=%lld K=V=128 C=64 (median of %d): "
              "phase0 generic %.3f ms fast %.3f ms | phase1 vB=%lld generic "
              "%.3f ms fast %.3f ms (fast vB=%lld: %.3f ms) | total generic "
              "%.3f ms fast %.3f ms (%.1fx)\n",
              (long long)T, (long long)H, kReps, old0, new0, (long long)vB,
              old1, new1, (long long)vB2, new1Half, old0 + old1, new0 + new1,
              (old0 + old1) / (new0 + new1));
  std::fflush(stdout);
}

//===----------------------------------------------------------------------===//
// Elementwise, embedding, argmax
//===----------------------------------------------------------------------===//

template <bool kSilu> struct EltTile {
  const bf16 *a;
  const bf16 *b;
  bf16 *y;
  int64_t n, per;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    const int64_t e0 = tile * per, e1 = lnv::imin(n, e0 + per);
    if (e0 >= e1)
      return 0;
    if constexpr (kSilu)
      return sm90::siluMul<kThreads>(a, b, y, e0, e1, smem);
    else
      return sm90::add<kThreads>(a, b, y, e0, e1, smem);
  }
};

template <bool kSilu> void testElementwise(int64_t n, int64_t forcePer) {
  const int64_t per = forcePer ? forcePer : elementsPerTask(n);
  const std::string name = std::string(kSilu ? "silu_mul" : "add") +
                           " n=" + std::to_string(n) +
                           " per=" + std::to_string(per);
  auto a = randVec<bf16>(n, -4, 4), b = randVec<bf16>(n, -2, 2);
  std::vector<bf16> ref = poisonVec<bf16>(n);
  if (kSilu)
    host::siluMul(a.data(), b.data(), ref.data(), 0, n);
  else
    host::add(a.data(), b.data(), ref.data(), 0, n);
  Dev<bf16> da(a), db(b), dy(poisonVec<bf16>(n));
  EltTile<kSilu> f{da.p, db.p, dy.p, n, per};
  expectStatus(name, runTiles(f, ceilDiv(n, per), 0), 0);
  compare(name, dy.get(), ref, 1e-2, 1e-2);
}

struct EmbeddingTile {
  const bf16 *table;
  const int32_t *ids;
  bf16 *y;
  int64_t vocab, D;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    // As the emitted tile does: the body's false becomes status 1.
    return sm90::embedding<kThreads>(table, ids, y, vocab, D, tile, tile + 1,
                                     smem)
               ? 0
               : lnv::kBodyBadIndex;
  }
};

void testEmbedding() {
  const int64_t vocab = 32000, D = 4096, B = 32;
  const std::string name = "embedding V=32000 D=4096 B=32";
  auto table = randVec<bf16>(vocab * D, -1, 1);
  std::vector<int32_t> ids(B);
  for (auto &i : ids)
    i = int32_t(irand(0, vocab - 1));
  ids[5] = int32_t(vocab + 3); // out of range: zero row, status 1
  std::vector<bf16> ref = poisonVec<bf16>(B * D);
  const bool ok =
      host::embedding(table.data(), ids.data(), ref.data(), vocab, D, 0, B);
  Dev<bf16> dt(table), dy(poisonVec<bf16>(B * D));
  Dev<int32_t> di(ids);
  EmbeddingTile f{dt.p, di.p, dy.p, vocab, D};
  const int32_t status = runTiles(f, B, 0);
  report(!ok && status == lnv::kBodyBadIndex, name + " bad id",
         "status " + std::to_string(status) + " (expected 1)");
  compare(name, dy.get(), ref, 0, 0);
}

struct ArgmaxTile {
  const bf16 *x;
  int32_t *idx;
  int64_t V;
  __device__ int32_t operator()(int64_t tile, char *smem) const {
    return sm90::argmaxRows<kThreads>(x, idx, V, tile, tile + 1, smem);
  }
};

void testArgmax() {
  const int64_t B = 8, V = 128256;
  const std::string name = "argmax B=8 V=128256";
  auto x = randVec<bf16>(B * V, -8, 8);
  const bf16 big = fromF<bf16>(20.f);
  x[0 * V + 77777] = x[0 * V + 99999] = big; // tie: lowest index
  x[1 * V + 5] = poison<bf16>();             // NaN wins...
  x[1 * V + 90000] = poison<bf16>();         // ...the first one
  x[1 * V + 7] = big;
  x[2 * V + V - 1] = big; // last index
  for (int64_t i = 0; i < V; ++i)
    x[3 * V + i] = fromF<bf16>(-INFINITY); // all -inf: index 0
  x[4 * V + 0] = big;                      // first index
  std::vector<int32_t> ref(B, -1);
  host::argmaxRows(x.data(), ref.data(), V, 0, B);
  Dev<bf16> dx(x);
  Dev<int32_t> di(std::vector<int32_t>(B, -1));
  ArgmaxTile f{dx.p, di.p, V};
  expectStatus(name, runTiles(f, B, sm90::argmaxSmemBytes<kThreads>()), 0);
  auto got = di.get();
  bool ok = got == ref;
  std::string detail = "indices";
  for (int64_t b = 0; b < B; ++b)
    detail += " " + std::to_string(got[b]) + "/" + std::to_string(ref[b]);
  report(ok, name, detail);
}

//===----------------------------------------------------------------------===//
// Numerics.cuh
//===----------------------------------------------------------------------===//

__global__ void sigmoidKernel(const float *x, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = lnv::sigmoid(x[i]);
}

/// nv::sigmoid against fp64 over the whole range: random x in [-120, 120]
/// (below -87, 1 + e^-x passes 2^126, where IEEE division leaves its fast
/// branch), both sides of the subnormal results, and the ends.
void testSigmoid() {
  const std::string name = "sigmoid x in [-120, 120]";
  std::vector<float> x = randVec<float>(1 << 16, -120.f, 120.f);
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 87.3f, -87.3f, -88.8f, -103.f,
                  -104.f, 200.f, -200.f, 3e38f, -3e38f, INFINITY, -INFINITY})
    x.push_back(v);
  std::vector<float> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    ref[i] = float(1.0 / (1.0 + std::exp(-double(x[i]))));
  Dev<float> dx(x), dy(poisonVec<float>(x.size()));
  sigmoidKernel<<<64, 256>>>(dx.p, dy.p, int64_t(x.size()));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  // About 3 ulp; subnormal results to a few of their steps (2^-149).
  compare(name, dy.get(), ref, 1e-44, 4e-7);
}

//===----------------------------------------------------------------------===//
// Part 2: the persistent loop
//===----------------------------------------------------------------------===//

enum ToyKind : int32_t { kChain, kDiamA, kDiamB, kDiamD, kFail, kNop };
constexpr int kChainWidth = 256; // one int per thread per chain link
constexpr int kDiamN = 4096;

struct ToyRun {
  int32_t *chain;   // [links][256]
  int32_t *diamA;   // [4096]
  int32_t *diamB;   // [fan * 64]
  int32_t *diamOut; // [epochs]
  int32_t fan;
  /// The record's function is the task's kind, its tile the argument.
  __device__ int32_t operator()(int32_t kind, int32_t arg, int32_t task,
                                const LoomKernelArgs &args, const LoomTaskBinding *,
                                char *smem) const {
    const int t = threadIdx.x;
    // The loop's launch number: args.epoch, or (0) this worker's count.
    const int32_t epoch =
        args.epoch
            ? int32_t(args.epoch)
            : int32_t(args.control[LOOM_CONTROL_WORKERS + blockIdx.x] + 1);
    switch (kind) {
    case kChain: {
      // Link i reads what another thread of another block wrote in link
      // i - 1: the event protocol must publish every thread's stores.
      const int32_t i = arg;
      chain[i * kChainWidth + t] =
          i == 0 ? 1000 * epoch + t
                 : chain[(i - 1) * kChainWidth + (t + 1) % kChainWidth] + 1;
      return 0;
    }
    case kDiamA:
      for (int j = t; j < kDiamN; j += kThreads)
        diamA[j] = epoch + j;
      return 0;
    case kDiamB: {
      const int32_t k = arg;
      if (t < 64)
        diamB[k * 64 + t] = 2 * diamA[(k * 64 + t + 17) % kDiamN];
      return 0;
    }
    case kDiamD: {
      int32_t *sum = reinterpret_cast<int32_t *>(smem);
      if (t == 0)
        *sum = 0;
      __syncthreads();
      int32_t part = 0;
      for (int j = t; j < fan * 64; j += kThreads)
        part += diamB[j];
      atomicAdd(sum, part);
      __syncthreads();
      if (t == 0)
        diamOut[epoch - 1] = *sum;
      return 0;
    }
    case kFail:
      return 7;
    default:
      return 0;
    }
  }
};

/// A toy schedule's records window: large enough for every toy list.
constexpr int kToyWindowWords = 256;

__global__ void __launch_bounds__(kThreads, 1)
    loopKernel(LoomKernelArgs args, lnv::EngineSchedule s, ToyRun run) {
  lnv::loomPersistentLoop<kThreads, kToyWindowWords, 1>(args, s, run);
}

/// A task table under construction (host side).
struct ToyProgram {
  int32_t numWorkers = 0, numEvents = 0;
  std::vector<int32_t> kind, arg, worker;
  std::vector<std::vector<int32_t>> waits, triggers;
  std::vector<int32_t> needs;

  int32_t addEvent(int32_t need) {
    needs.push_back(need);
    return numEvents++;
  }
  int32_t addTask(ToyKind k, int32_t a, int32_t w, std::vector<int32_t> wt,
                  std::vector<int32_t> tr) {
    kind.push_back(k);
    arg.push_back(a);
    worker.push_back(w);
    waits.push_back(std::move(wt));
    triggers.push_back(std::move(tr));
    return int32_t(kind.size()) - 1;
  }
};

/// A ToyProgram's records (kernels/common/WorkerRecords.h) on the device;
/// tasks in id order are a topological order (each task waits only on
/// lower ids), which is also the dynamic queue's order.
struct ToyDevice {
  Dev<int32_t> records, queueOffsets;
  lnv::EngineSchedule schedule{};
  int32_t numTasks, numEvents;

  ToyDevice(const ToyProgram &p, bool dynamic)
      : numTasks(int32_t(p.kind.size())), numEvents(p.numEvents) {
    std::vector<loom::records::Task> tasks(numTasks);
    for (int32_t t = 0; t < numTasks; ++t) {
      tasks[t] = {t, p.kind[t], p.arg[t], {}, p.triggers[t], {}};
      for (int32_t e : p.waits[t])
        tasks[t].waits.push_back({e, p.needs[e]});
    }
    schedule.numTasks = numTasks;
    schedule.numEvents = numEvents;
    schedule.runtimeBinding = -1;
    if (dynamic) {
      std::vector<const loom::records::Task *> queue;
      for (const auto &t : tasks)
        queue.push_back(&t);
      loom::records::QueueRecords r = loom::records::packQueue(queue);
      records = Dev<int32_t>(r.words);
      queueOffsets = Dev<int32_t>(r.offsets);
      schedule.maxRecordWords = r.maxRecordWords;
      schedule.mode = LOOM_SCHEDULE_DYNAMIC;
    } else {
      std::vector<std::vector<const loom::records::Task *>> lists(
          p.numWorkers);
      for (int32_t t = 0; t < numTasks; ++t)
        lists[p.worker[t]].push_back(&tasks[t]);
      loom::records::StaticRecords r = loom::records::packStatic(lists);
      if (r.maxRecordWords + loom::records::kAlignWords > kToyWindowWords)
        std::abort();
      records = Dev<int32_t>(r.words);
      queueOffsets = Dev<int32_t>(std::vector<int32_t>{0});
      schedule.stride = r.stride;
      schedule.maxRecordWords = r.maxRecordWords;
      schedule.mode = LOOM_SCHEDULE_STATIC;
    }
    schedule.records = records.p;
    schedule.queueOffsets = queueOffsets.p;
  }
};

/// Host-mapped status + abort flag, as the runtime would allocate them.
struct Watch {
  LoomWorkerStatus *status = nullptr, *dStatus = nullptr;
  int32_t *abortFlag = nullptr, *dAbort = nullptr;
  int32_t workers;
  explicit Watch(int32_t w) : workers(w) {
    CUDA_CHECK(cudaHostAlloc(&status, w * sizeof(LoomWorkerStatus),
                             cudaHostAllocMapped));
    CUDA_CHECK(cudaHostAlloc(&abortFlag, sizeof(int32_t), cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer(&dStatus, status, 0));
    CUDA_CHECK(cudaHostGetDevicePointer(&dAbort, abortFlag, 0));
    reset();
  }
  ~Watch() {
    cudaFreeHost(status);
    cudaFreeHost(abortFlag);
  }
  void reset() {
    for (int32_t i = 0; i < workers; ++i)
      status[i] = LoomWorkerStatus{-2, -2, 0, 0, 0, 0};
    *reinterpret_cast<volatile int32_t *>(abortFlag) = 0;
  }
  const volatile LoomWorkerStatus &at(int32_t w) const {
    return reinterpret_cast<const volatile LoomWorkerStatus *>(status)[w];
  }
};

/// `events` holds the events, the queue and the control words (a header
/// and one per worker); epoch 0 takes the launch number from them.
void launchLoop(const ToyDevice &d, const ToyRun &run, Watch &watch,
                unsigned long long *events, unsigned long long epoch,
                unsigned long long timeoutCycles, int32_t workers,
                cudaStream_t stream) {
  LoomKernelArgs args{};
  args.bindings = nullptr;
  args.workspace = nullptr;
  args.events = events;
  args.epoch = epoch;
  args.status = watch.dStatus;
  args.abort_flag = watch.dAbort;
  args.timeout_cycles = timeoutCycles;
  args.control = events + d.numEvents + 1;
  lnv::EngineSchedule s = d.schedule;
  ToyRun r = run;
  void *params[] = {&args, &s, &r};
  CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(loopKernel),
                                         dim3(workers), dim3(kThreads), params,
                                         1024, stream));
}

/// Zeroed counters: events, the queue, the control words.
Dev<unsigned long long> toyCounters(const ToyProgram &p) {
  return Dev<unsigned long long>(std::vector<unsigned long long>(
      p.numEvents + 1 + LOOM_CONTROL_WORKERS + p.numWorkers, 0));
}

int32_t numSms() {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

/// Chain + diamond + multi-wait over all SMs, 5 epochs, no counter reset.
void testLoopEpochs(bool dynamic) {
  const std::string name = std::string("loop ") +
                           (dynamic ? "dynamic" : "static") +
                           " chain+diamond 5 epochs";
  const int32_t W = numSms();
  const int32_t links = 3 * W, fan = 32, epochs = 5;
  ToyProgram p;
  p.numWorkers = W;
  int32_t prev = -1;
  for (int32_t i = 0; i < links; ++i) {
    int32_t e = p.addEvent(1);
    std::vector<int32_t> wait;
    if (prev >= 0)
      wait.push_back(prev);
    p.addTask(kChain, i, i % W, wait, {e});
    prev = e;
  }
  const int32_t chainDone = prev;
  const int32_t aDone = p.addEvent(1), bDone = p.addEvent(fan);
  p.addTask(kDiamA, 0, 0, {}, {aDone});
  for (int32_t k = 0; k < fan; ++k)
    p.addTask(kDiamB, k, (k + 1) % W, {aDone}, {bDone});
  p.addTask(kDiamD, 0, W - 1, {bDone, chainDone}, {});
  ToyDevice d(p, dynamic);

  Dev<int32_t> chain(links * kChainWidth), diamA(kDiamN), diamB(fan * 64),
      diamOut(std::vector<int32_t>(epochs, -1));
  Dev<unsigned long long> events = toyCounters(p);
  ToyRun run{chain.p, diamA.p, diamB.p, diamOut.p, fan};
  Watch watch(W);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  bool ok = true;
  std::string detail;
  auto checkChain = [&](int32_t e) {
    auto c = chain.get();
    for (int32_t t = 0; t < kChainWidth; ++t) {
      const int32_t want = 1000 * e + (t + links - 1) % kChainWidth + links - 1;
      if (c[(links - 1) * kChainWidth + t] != want) {
        ok = false;
        detail += " chain[" + std::to_string(t) +
                  "]=" + std::to_string(c[(links - 1) * kChainWidth + t]) +
                  " want " + std::to_string(want);
        return;
      }
    }
  };
  // Launches 1 and 2 carry their number (the runtime's launches); 3 to 5
  // are queued back to back with epoch 0, numbered by the device alone,
  // from the count the host stores first (DeviceAbi.h).
  const int32_t hostNumbered = 2;
  auto t0 = std::chrono::steady_clock::now();
  for (int32_t e = 1; e <= epochs; ++e) {
    if (e == hostNumbered + 1) {
      std::vector<unsigned long long> done(W, uint64_t(hostNumbered));
      CUDA_CHECK(cudaMemcpy(events.p + p.numEvents + 1 + LOOM_CONTROL_WORKERS,
                            done.data(), W * sizeof(unsigned long long),
                            cudaMemcpyHostToDevice));
    }
    launchLoop(d, run, watch, events.p, e <= hostNumbered ? e : 0, 0, W,
               stream);
    if (e <= hostNumbered || e == epochs) {
      CUDA_CHECK(cudaStreamSynchronize(stream));
      checkChain(e);
    }
  }
  const double totalMs = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t0)
                             .count();
  auto out = diamOut.get();
  for (int32_t e = 1; e <= epochs; ++e) {
    int64_t want = 0;
    for (int32_t j = 0; j < fan * 64; ++j)
      want += 2 * (e + (j + 17) % kDiamN);
    if (out[e - 1] != want) {
      ok = false;
      detail += " diamond of launch " + std::to_string(e) + ": " +
                std::to_string(out[e - 1]) + " want " + std::to_string(want);
    }
  }
  // A healthy launch writes no status: every record is as reset.
  for (int32_t w = 0; w < W; ++w)
    if (watch.at(w).task != -2 || watch.at(w).error != 0) {
      ok = false;
      detail += " worker " + std::to_string(w) +
                " status task=" + std::to_string(watch.at(w).task) +
                " error=" + std::to_string(watch.at(w).error);
      break;
    }
  auto ev = events.get();
  for (int32_t e = 0; e < p.numEvents; ++e)
    if (ev[e] != uint64_t(epochs) * p.needs[e]) {
      ok = false;
      detail +=
          " event " + std::to_string(e) + " count " + std::to_string(ev[e]);
      break;
    }
  const uint64_t wantQueue = dynamic ? uint64_t(epochs) * (d.numTasks + W) : 0;
  if (ev[p.numEvents] != wantQueue) {
    ok = false;
    detail += " queue " + std::to_string(ev[p.numEvents]) + " want " +
              std::to_string(wantQueue);
  }
  const unsigned long long *control = ev.data() + p.numEvents + 1;
  for (int32_t w = 0; w < W; ++w)
    if (control[LOOM_CONTROL_WORKERS + w] != uint64_t(epochs) ||
        control[LOOM_CONTROL_FAILED] != 0) {
      ok = false;
      detail += " control of worker " + std::to_string(w) + ": " +
                std::to_string(control[LOOM_CONTROL_WORKERS + w]) +
                " launches, failed " +
                std::to_string(control[LOOM_CONTROL_FAILED]);
      break;
    }
  char buf[128];
  std::snprintf(buf, sizeof buf, "W=%d tasks=%d events=%d, %.3f ms/launch", W,
                d.numTasks, p.numEvents, totalMs / epochs);
  report(ok, name, buf + detail);
  CUDA_CHECK(cudaStreamDestroy(stream));
}

/// Worker 0's task waits on an event nobody triggers; worker 1's task
/// waits on worker 0's. With a timeout, or with the host's abort flag, the
/// launch must end and the status must say who waited on what.
void testLoopDeadlock(bool useAbortFlag) {
  const std::string name = std::string("loop deadlock via ") +
                           (useAbortFlag ? "abort flag" : "timeout");
  const int32_t W = 8;
  ToyProgram p;
  p.numWorkers = W;
  const int32_t never = p.addEvent(1), after0 = p.addEvent(1);
  p.addTask(kNop, 0, 0, {never}, {after0});
  p.addTask(kNop, 0, 1, {after0}, {});
  p.addTask(kNop, 0, 2, {}, {}); // an innocent worker finishes
  ToyDevice d(p, false);
  Dev<unsigned long long> events = toyCounters(p);
  ToyRun run{nullptr, nullptr, nullptr, nullptr, 0};
  Watch watch(W);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const unsigned long long epoch = 3; // any epoch: needs scale with it
  const unsigned long long timeout = useAbortFlag ? 0 : 20000000ull; // ~10 ms
  auto t0 = std::chrono::steady_clock::now();
  launchLoop(d, run, watch, events.p, epoch, timeout, W, stream);
  bool ok = true;
  std::string detail;
  if (useAbortFlag) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (cudaStreamQuery(stream) != cudaErrorNotReady) {
      ok = false;
      detail += " kernel ended before the abort";
    }
    // What the runtime's watchdog sees while it hangs:
    const volatile LoomWorkerStatus &s0 = watch.at(0);
    if (s0.task != 0 || s0.event != never || s0.needed != epoch) {
      ok = false;
      detail += " live status of worker 0 wrong";
    }
    *reinterpret_cast<volatile int32_t *>(watch.abortFlag) = 1;
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
  const volatile LoomWorkerStatus &s0 = watch.at(0), &s1 = watch.at(1),
                                  &s2 = watch.at(2);
  // With the flag both stuck workers leave aborted. With the timeout the
  // first to time out raises the flag, so the other may leave either way.
  auto gaveUp = [&](int32_t err) {
    return useAbortFlag
               ? err == lnv::kWorkerAborted
               : err == lnv::kWorkerAborted || err == lnv::kWorkerTimedOut;
  };
  if (s0.task != 0 || s0.event != never || s0.seen != 0 || s0.needed != epoch ||
      !gaveUp(s0.error))
    ok = false;
  if (s1.task != 1 || s1.event != after0 || s1.needed != epoch ||
      !gaveUp(s1.error))
    ok = false;
  if (!useAbortFlag && s0.error != lnv::kWorkerTimedOut &&
      s1.error != lnv::kWorkerTimedOut)
    ok = false;
  // The innocent worker finished: a healthy worker writes no status.
  if (s2.task != -2 || s2.error != 0)
    ok = false;
  // Later launches must see that this one failed.
  if (events.get()[p.numEvents + 1 + LOOM_CONTROL_FAILED] != 1)
    ok = false;
  if (*reinterpret_cast<volatile int32_t *>(watch.abortFlag) != 1)
    ok = false;
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "ended after %.1f ms; w0 task=%d event=%d seen=%llu needed=%llu "
      "error=%d; w1 task=%d event=%d error=%d; w2 task=%d",
      ms, s0.task, s0.event, (unsigned long long)s0.seen,
      (unsigned long long)s0.needed, s0.error, s1.task, s1.event, s1.error,
      s2.task);
  report(ok, name, buf + detail);
  CUDA_CHECK(cudaStreamDestroy(stream));
}

/// A body returns 7: its worker records it, the others abort.
void testLoopBodyError() {
  const std::string name = "loop body error";
  const int32_t W = 4;
  ToyProgram p;
  p.numWorkers = W;
  const int32_t e0 = p.addEvent(1);
  p.addTask(kFail, 0, 0, {}, {e0});
  p.addTask(kNop, 0, 1, {e0}, {});
  ToyDevice d(p, false);
  Dev<unsigned long long> events = toyCounters(p);
  ToyRun run{nullptr, nullptr, nullptr, nullptr, 0};
  Watch watch(W);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  launchLoop(d, run, watch, events.p, 1, 0, W, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const volatile LoomWorkerStatus &s0 = watch.at(0), &s1 = watch.at(1);
  const bool ok = s0.task == 0 && s0.event == -1 && s0.error == 7 &&
                  s1.task == 1 && s1.event == e0 &&
                  s1.error == lnv::kWorkerAborted && events.get()[e0] == 0 &&
                  events.get()[p.numEvents + 1 + LOOM_CONTROL_FAILED] == 1;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "w0 task=%d error=%d; w1 task=%d event=%d error=%d", s0.task,
                s0.error, s1.task, s1.event, s1.error);
  report(ok, name, buf);
  CUDA_CHECK(cudaStreamDestroy(stream));
}

} // namespace

int main(int argc, char **argv) {
  // --filter S: only the groups whose name contains S (decoder, mla, kda,
  // numerics, loop); --no-timing: skip the timing printouts.
  const char *filter = nullptr;
  bool timing = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (a.rfind("--filter=", 0) == 0) {
      filter = argv[i] + 9;
    } else if (a == "--no-timing") {
      timing = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--filter decoder|mla|kda|numerics|loop] "
                   "[--no-timing]\n",
                   argv[0]);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  auto selected = [&](const char *group) {
    return !filter || std::strstr(group, filter) != nullptr;
  };
  if (const char *env = std::getenv("LOOM_SEED"))
    gSeed = std::strtoull(env, nullptr, 0);
  else
    gSeed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  gRng.seed(gSeed);
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  gMaxSmem = int64_t(prop.sharedMemPerBlockOptin);
  std::printf(
      "device %s (sm_%d%d, %d SMs, %lld B smem/block), LOOM_SEED=%llu\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount,
      (long long)gMaxSmem, (unsigned long long)gSeed);

  // Decoder bodies (Llama-3.1-8B shapes where they matter).
  if (selected("decoder")) {
  testRmsnorm(32, 4096, false);
  testRmsnorm(5, 4096, true);
  testRmsnorm(32 * 32, 128, false); // Qwen3 per-head q norm
  // Wider rows, rows that end inside a thread's last 16-byte chunk, and
  // rows of no 16-byte vectors, per warp and per block.
  testRmsnorm(3, 12288, false);
  testRmsnorm(2, 5000, true);
  testRmsnorm(4, 4100, false);
  testRmsnorm(64, 100, false);
  testRmsnorm(40, 1000, true);
  for (int64_t M : {1, 7, 16, 32, 40})
    testLinear(M, 4096, 4096, M == 7);
  testLinear(3, 4096, 4096, true, 512);    // 2 pairs per warp
  testLinear(9, 4096, 4100, false, 128);   // ragged last tile, K split in-block
  testLinear(5, 4096, 1024, true);         // split-K 2
  testLinear(9, 4000, 256, false);         // split-K with unaligned k ranges
  testLinear(32, 14336, 4096, true);       // down projection
  testLinear(17, 4096, 4096, false, 0, 0); // no shared memory: no K split
  // Tiles whose 32-column pairs do not divide among the warps: equal runs
  // of k steps per warp (1.5, 3.5 and 7 pairs at 1, 9 and 32 rows of x; at
  // 32 rows the runs' slots do not fit and K is split per pair), and once
  // with all the shared memory a kernel has.
  for (int64_t nTile : {48, 112, 224})
    for (int64_t M : {1, 9, 32})
      testLinear(M, 4096, 4096, nTile == 48, nTile);
  testLinear(3, 4000, 4096, false, 48);               // ragged last k step
  testLinear(12, 14336, 4096, false, 48);             // down projection
  testLinear(1, 4096, 1024, true, 48, kernelSmem());
  // All of a kernel's shared memory: up to 32 rows of x through the
  // bulk-copy ring (LinearRing.cuh; its three shapes at 1-8, 9-16 and 17-32
  // rows), more through the registers.
  for (int64_t M : {1, 3, 8, 9, 16, 17, 32, 33})
    testLinear(M, 4096, 4096, M == 3 || M == 17, 0, kernelSmem());
  testLinear(1, 4096, 6144, true, 48, kernelSmem());  // Q/K/V-sized tiles
  testLinear(32, 4096, 6144, true, 48, kernelSmem());
  testLinear(8, 14336, 4096, true, 0, kernelSmem());  // down projection
  testLinear(32, 14336, 4096, true, 0, kernelSmem());
  testLinear(2, 4000, 1000, true, 40, kernelSmem());  // ragged k chunk, rows
  testLinear(13, 4000, 1000, true, 40, kernelSmem());
  testLinear(29, 4000, 1000, false, 40, kernelSmem());
  testLinear(5, 4096, 1024, false, 0, kernelSmem());  // split-K 2
  testLinear(24, 4096, 1024, false, 0, kernelSmem());
  testLinear(1, 64, 256, false, 0, kernelSmem());     // one short chunk
  testLinear(32, 64, 256, false, 0, kernelSmem());
  testLinear(20, 4096, 14336, false, 224, kernelSmem()); // gate / up tiles
  // x's rows RMS-normalised in the tile (a linear with `norm`): the sums
  // of squares from the ring's first row group at each ring shape, from a
  // pass of their own for split K and the register path (two blocks of
  // rows at 40), an unaligned scale, the plain path (K not a multiple of 8).
  for (int64_t M : {1, 8, 9, 17, 32})
    testLinear(M, 4096, 4096, M == 9, 48, kernelSmem(), M == 1, 0, true);
  testLinear(32, 4096, 14336, false, 224, kernelSmem(), false, 0, true);
  testLinear(3, 4096, 4096, true, 48, kernelSmem(), true, 7, true);
  testLinear(9, 4096, 4096, false, 48, kernelSmem(), true, 16, true);
  testLinear(5, 4096, 1024, false, 0, kernelSmem(), false, 0, true); // split
  testLinear(40, 4096, 4096, true, 0, kernelSmem(), false, 0, true);
  testLinear(4, 4096, 1024, false, 48, 0, false, 0, true); // no shared memory
  testLinear(2, 4096, 4096, false, 48, kernelSmem(), false, 0, true, 1);
  testLinear(3, 1001, 256, true, 32, kernelSmem(), false, 0, true);
  // The fewest stages a ring takes: every stage but the first two refilled.
  for (int64_t M : {4, 12, 30})
    testLinear(M, 4096, 4096, false, 224,
               sm90::detail::linearRingSmemBytes<kThreads>(3, M));
  // The first stages issued before the body (the engine's preload for a
  // task that waits): ring tiles, split-K, the 3-stage minimum, a single
  // short chunk, and tiles whose path has no preload.
  for (int64_t M : {1, 8, 9, 32, 33})
    testLinear(M, 4096, 4096, M == 8, 0, kernelSmem(), true);
  testLinear(5, 4096, 1024, false, 0, kernelSmem(), true);
  testLinear(21, 4096, 1024, false, 0, kernelSmem(), true);
  testLinear(2, 4000, 1000, true, 40, kernelSmem(), true);
  testLinear(1, 64, 256, false, 0, kernelSmem(), true);
  for (int64_t M : {4, 16, 32})
    testLinear(M, 4096, 4096, false, 224,
               sm90::detail::linearRingSmemBytes<kThreads>(3, M), true);
  testLinear(1, 4096, 1024, true, 48, sm90::linearSmemBytes<kThreads>(), true);
  // Workers: a block runs many tiles, so the ring's barriers carry their
  // phases across tasks whose slots are used an odd or even number of
  // times (rings fuller and emptier than the stages, split-K's ragged k
  // ranges, the 3-stage minimum), every other task preloaded.
  testLinear(3, 4000, 1000, true, 40, kernelSmem(), true, 7);
  testLinear(19, 4000, 1000, true, 40, kernelSmem(), true, 7);
  testLinear(8, 14336, 4096, false, 48, kernelSmem(), true, 5);
  testLinear(32, 14336, 4096, false, 48, kernelSmem(), true, 5);
  testLinear(5, 4000, 1024, false, 0, kernelSmem(), true, 3);
  testLinear(2, 4096, 4096, true, 224,
             sm90::detail::linearRingSmemBytes<kThreads>(3), true, 4);
  testLinear(31, 4096, 4096, true, 224,
             sm90::detail::linearRingSmemBytes<kThreads>(3, 31), true, 4);
  testLinearGeneric();
  testRope(32, 32, 128, 128, false);
  testRope(16, 8, 128, 64, true, 3); // partial rotary, tiles across tokens
  testRope(8, 8, 128, 64, false, 5, true);
  testRope(16, 8, 128, 128, false, 0, false, true); // Llama 3.1's scaling
  testRope(8, 8, 128, 128, true, 5, true, true);
  testKvAppend();
  // Llama-3-8B on the H200: max batch 32 (N = 256 tasks, S = 1), runtime
  // batch 8 of uneven lengths: the tasks of absent requests take splits of
  // the present ones (several per (request, kv head), unevenly).
  testGqa({1, 100, 2000, 17, 5, 300, 64, 1024}, 32, 32, 8, 128, 16);
  testGqa({2048, 2048, 2048, 2048, 2048, 2048, 2048, 2048}, 32, 32, 8, 128, 16);
  testGqa({3100, 0, 1, 4500}, 4, 32, 8, 128, 16);
  testGqa({8000}, 1, 32, 8, 128, 16);
  testGqa({30000, 5}, 32, 32, 8, 128, 16); // splits of many staged chunks
  testGqa({2000, 3333}, 3, 64, 8, 128, 16);      // group 8, a batch row unused
  testGqa({1500, 2700, 999}, 3, 28, 4, 128, 16); // group 7
  testGqa({1200, 3000}, 2, 32, 2, 128, 1);       // group 16: two passes
  testGqa({2100, 700}, 2, 16, 2, 64, 16);        // D = 64
  testGqa({1800}, 1, 8, 1, 256, 16);             // D = 256
  testGqa({600, 1000}, 2, 8, 2, 96, 16);         // plain path
  testElementwise<true>(32 * 14336, 0);
  testElementwise<true>(10000, 300); // unaligned element ranges
  testElementwise<false>(32 * 4096, 0);
  testEmbedding();
  testArgmax();
  }

  // MLA (DeepSeek-V3 TP8: H = 16, Dc = 512, Dp = 64).
  if (selected("mla")) {
  testMla<bf16>({2500, 0, 1, 4096, 3000, 777, 1500, 2048}, 8, 16, 512, 64, 1);
  testMla<bf16>({3000, 1, 2049, 64, 65, 1000}, 8, 16, 512, 64, 64);
  testMla<bf16>({6000}, 1, 16, 512, 64, 1, " long");
  testMla<bf16>({700, 1300}, 2, 32, 512, 64, 16);
  testMla<bf16>({900, 50, 1600}, 3, 8, 512, 64, 1);
  {
    std::vector<int32_t> many(40);
    for (auto &l : many)
      l = int32_t(irand(0, 400));
    testMla<bf16>(many, 48, 16, 512, 64, 1, " many");
  }
  testMla<f16>({1500, 2222}, 2, 16, 512, 64, 1, " f16");
  testMla<bf16>({500, 333}, 2, 4, 128, 32, 16, " plain");
  // The launch measured slow before (a 1000-token request over ~98 pieces).
  testMla<bf16>({0, 1, 37, 7, 300, 1000}, 6, 16, 512, 64, 1, " h200case");
  // Every slot active: requests spanning up to all 132 pieces, merged with
  // cached weights, then with room for 1 and for 5 pieces (chunked).
  testMla<bf16>({0, 1, 37, 7, 300, 1000}, 6, 16, 512, 64, 1, " dense", 1);
  testMla<bf16>({9000, 3, 40}, 3, 16, 512, 64, 1, " dense", 1);
  testMla<bf16>({9000, 3, 40}, 3, 16, 512, 64, 1, " dense smem1", 1,
                sm90::mlaMergeMinSmemBytes(16));
  testMla<bf16>({9000, 3, 40}, 3, 16, 512, 64, 64, " smem5", 1,
                4 * 16 * (1 + 5));
  // Dc not a multiple of 4: the merge's scalar path.
  testMla<bf16>({500, 333}, 2, 4, 130, 32, 16, " plain odd", 1);

  }

  // KDA (K = V = 128 unless noted).
  if (selected("kda")) {
    using G = host::KdaGate;
    testKda({{1, 699, 800, 548}, 2048, 4, 4, 128, 128, 64, G::Unbounded, true,
             true, false, ""});
    testKda({{1, 699, 800, 548}, 2048, 4, 4, 128, 128, 64, G::Bounded, true,
             false, false, ""});
    testKda({{17, 283}, 320, 2, 2, 64, 128, 16, G::Bounded, false, true,
             false, " C16 no-l2norm"});
    testKda({{130, 126}, 256, 2, 1, 256, 256, 64, G::Unbounded, true, true,
             false, " K256"});
    testKda({{200, 1}, 256, 2, 2, 128, 128, 64, G::Unbounded, true, true, true,
             ""});
    // The fast path at the benchmark shape (32-column V blocks), ragged
    // varlen with empty and length-1 sequences (16-column blocks), the
    // bounded gate at 32 heads, and slowly decaying gates (long memory).
    testKda({{8192}, 8192, 1, 32, 128, 128, 64, G::Unbounded, true, true,
             false, " long"});
    testKda({{1, 700, 0, 129, 63, 2000, 64, 5, 1000}, 4200, 9, 4, 128, 128, 64,
             G::Unbounded, true, true, false, " varlen"});
    testKda({{777, 1, 1290}, 2100, 3, 32, 128, 128, 64, G::Bounded, true, true,
             false, " varlen"});
    testKda({{3000}, 3000, 1, 8, 128, 128, 64, G::Unbounded, true, true, false,
             " weak-decay", true});
    if (timing)
      timeKda(8192, 32);
  }

  if (selected("numerics"))
    testSigmoid();

  // The persistent loop.
  if (selected("loop")) {
  testLoopEpochs(false);
  testLoopEpochs(true);
  testLoopDeadlock(false);
  testLoopDeadlock(true);
  testLoopBodyError();
  }

  std::printf("%d passed, %d failed\n", gPassed, gFailed);
  return gFailed == 0 ? 0 : 1;
}
