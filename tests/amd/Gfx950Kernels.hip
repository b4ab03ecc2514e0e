//===- Gfx950Kernels.hip - gfx950 kernels for the compile-and-inspect test ===//
//
// Not run anywhere: tests/amd/check-isa.sh compiles this translation unit
// for gfx950 (clang++-22, no ROCm) and inspects the code object: MFMA in the
// matrix bodies, no scratch and no spills anywhere, register and LDS use
// within the chip, and the memory-model instructions of the interpreter.
//
//   loom_test_interpreter      the persistent loop with a trivial task body
//   loom_body_<name>           one body per kernel, bf16 (f16 for one MLA
//                              split), shapes as run-time values: the
//                              per-body register numbers of the report
//   loom_program_<family>      the loop with a runTask switch over a
//                              family's bodies and literal shapes, the way
//                              EmitHip's generated source inlines them all
//                              into one kernel
//
// Every kernel uses LOOM_AMD_KERNEL_BOUNDS(256): 256 threads, one wave per
// SIMD, one workgroup per CU.
//
//===----------------------------------------------------------------------===//
#include "kernels/amd/Interpreter.h"
#include "kernels/amd/gfx950/DecoderBodies.h"
#include "kernels/amd/gfx950/KdaBodies.h"
#include "kernels/amd/gfx950/MlaBodies.h"

using loom::bf16;
using loom::f16;
namespace am = loom::amd;
namespace g = loom::gfx950;

constexpr int kThreads = 256;
#define LOOM_TEST_KERNEL(name)                                                 \
  extern "C" __global__ void LOOM_AMD_KERNEL_BOUNDS(kThreads) name

extern __shared__ __attribute__((aligned(16))) char lds[];

// Every LDS need of a body must fit next to the kernels' static LDS; the
// emitter gives the dynamic LDS as the chip's 160 KB less a reserve.
constexpr int64_t kLdsReserve = 4096;
constexpr int64_t kDynLds = am::kLdsBytesGfx950 - kLdsReserve;
static_assert(g::linearLdsBytes<kThreads>() <= kDynLds, "linear LDS");
static_assert(g::gqaSplitLdsBytes<kThreads>(128, 8) <= kDynLds, "gqa LDS");
static_assert(g::gqaSplitLdsBytes<kThreads>(256, 8) <= kDynLds, "gqa LDS");
static_assert(g::mlaSplitLdsBytes<kThreads>() <= kDynLds, "mla LDS");
static_assert(g::mlaMergeLdsBytes(128, 256) <= kDynLds, "mla merge LDS");
static_assert(g::kdaIntraLdsBytes(64, 128, 128) <= kDynLds, "kda intra LDS");
static_assert(g::kdaScanLdsBytes(64, 128) <= kDynLds, "kda scan LDS");

//===----------------------------------------------------------------------===//
// The interpreter alone: tables in device memory, a trivial body.
//===----------------------------------------------------------------------===//

struct Tables {
  const int32_t *workerBegin, *workerTasks, *waitBegin, *waitEvents,
      *triggerBegin, *triggerEvents, *eventNeeds;
  int32_t numTasks, numEvents, mode;
};

LOOM_TEST_KERNEL(loom_test_interpreter)(LoomKernelArgs args, Tables t) {
  am::loomPersistentLoop<kThreads>(
      args, t.workerBegin, t.workerTasks, t.waitBegin, t.waitEvents,
      t.triggerBegin, t.triggerEvents, t.eventNeeds, t.numTasks, t.numEvents,
      t.mode, [](int32_t task, const LoomKernelArgs &a, char *l) -> int32_t {
        float *out = static_cast<float *>(a.workspace);
        out[int64_t(task) * kThreads + am::threadId()] = float(task) + l[0];
        return task < 0 ? 7 : 0;
      });
}

//===----------------------------------------------------------------------===//
// One body per kernel, run-time shapes.
//===----------------------------------------------------------------------===//

struct DecArgs {
  const bf16 *x, *w, *res, *k, *v;
  bf16 *y, *kc, *vc;
  float *ws;
  const int32_t *pos, *ids, *indptr, *indices, *lens;
  int32_t *idx, *err;
  int64_t M, K, N, n0, n1, k0, k1, H, D, P, S, b, hk, s;
};

__device__ __forceinline__ void report(int32_t *err, int32_t e) {
  if (e != 0)
    err[0] = e;
}

LOOM_TEST_KERNEL(loom_body_rmsnorm)(DecArgs a) {
  report(a.err,
         g::rmsnormRows<kThreads>(a.x, a.w, a.y, a.D, 1e-5f, a.n0, a.n1, lds));
}
LOOM_TEST_KERNEL(loom_body_linear_tile)(DecArgs a) {
  report(a.err, g::linearTile<kThreads>(a.x, a.w, a.res, a.y, a.M, a.K, a.N,
                                        a.n0, a.n1, lds));
}
LOOM_TEST_KERNEL(loom_body_linear_partial)(DecArgs a) {
  report(a.err, g::linearPartial<kThreads>(a.x, a.w, a.ws, a.M, a.K, a.N, a.n0,
                                           a.n1, a.k0, a.k1, lds));
}
LOOM_TEST_KERNEL(loom_body_linear_reduce)(DecArgs a) {
  report(a.err, g::linearReduce<kThreads>(a.ws, a.S, a.M * a.N, a.res, a.y, a.M,
                                          a.N, a.n0, a.n1, lds));
}
LOOM_TEST_KERNEL(loom_body_rope)(DecArgs a) {
  report(a.err, g::rope<kThreads>(a.x, a.pos, a.y, a.H, a.D, a.D, 5e5f,
                                  loom::RopeScaling{8, 1, 4, 8192}, a.n0,
                                  a.n1, lds));
}
LOOM_TEST_KERNEL(loom_body_kv_append)(DecArgs a) {
  report(a.err, g::kvAppend<kThreads>(a.k, a.v, a.pos, a.kc, a.vc, a.H, a.D,
                                      a.D, a.P, a.N, a.n0, a.n1, lds));
}
LOOM_TEST_KERNEL(loom_body_gqa_split)(DecArgs a) {
  report(a.err,
         g::gqaDecodeSplit<kThreads>(a.x, a.k, a.v, a.indptr, a.indices, a.lens,
                                     a.ws, a.M, a.M, a.H * 4, a.H, a.D, a.D,
                                     a.P, a.N, a.K, a.S, 0.088f, a.b, a.hk,
                                     a.s, lds));
}
LOOM_TEST_KERNEL(loom_body_gqa_merge)(DecArgs a) {
  report(a.err, g::gqaDecodeMerge<kThreads>(a.ws, a.lens, a.y, a.M, a.M,
                                            a.H * 4, a.H, a.D, a.S, a.b, a.hk,
                                            lds));
}
LOOM_TEST_KERNEL(loom_body_silu_mul)(DecArgs a) {
  report(a.err, g::siluMul<kThreads>(a.x, a.w, a.y, a.n0, a.n1, lds));
}
LOOM_TEST_KERNEL(loom_body_add)(DecArgs a) {
  report(a.err, g::add<kThreads>(a.x, a.w, a.y, a.n0, a.n1, lds));
}
LOOM_TEST_KERNEL(loom_body_embedding)(DecArgs a) {
  if (!g::embedding<kThreads>(a.x, a.ids, a.y, a.N, a.D, a.n0, a.n1, lds))
    report(a.err, am::kBodyBadIndex);
}
LOOM_TEST_KERNEL(loom_body_argmax)(DecArgs a) {
  report(a.err, g::argmaxRows<kThreads>(a.x, a.idx, a.N, a.n0, a.n1, lds));
}

template <typename T> struct MlaArgs {
  g::MlaParams<T> p;
  float *ws;
  int64_t slot, slots, task, merges, maxBatch;
  int32_t *err;
};

LOOM_TEST_KERNEL(loom_body_mla_split)(MlaArgs<bf16> a) {
  float *partialLse = a.ws + g::mlaPartialOFloats(a.slots, a.maxBatch,
                                                  a.p.numHeads, a.p.dimCkv);
  report(a.err,
         g::mlaSplit<kThreads>(a.p, a.slot, a.slots, a.ws, partialLse, lds));
}
LOOM_TEST_KERNEL(loom_body_mla_split_f16)(MlaArgs<f16> a) {
  float *partialLse = a.ws + g::mlaPartialOFloats(a.slots, a.maxBatch,
                                                  a.p.numHeads, a.p.dimCkv);
  report(a.err,
         g::mlaSplit<kThreads>(a.p, a.slot, a.slots, a.ws, partialLse, lds));
}
LOOM_TEST_KERNEL(loom_body_mla_merge)(MlaArgs<bf16> a) {
  const float *partialLse =
      a.ws +
      g::mlaPartialOFloats(a.slots, a.maxBatch, a.p.numHeads, a.p.dimCkv);
  report(a.err, g::mlaMerge<kThreads>(a.p, a.task, a.merges, a.slots, a.ws,
                                      partialLse, lds));
}

struct KdaArgs {
  g::KdaParams<bf16> p;
  float *ws;
  int64_t c0, c1, h, n, v0, v1;
  int32_t *err;
};

LOOM_TEST_KERNEL(loom_body_kda_intra)(KdaArgs a) {
  report(a.err, g::kdaIntraChunk<kThreads>(a.p, a.c0, a.c1, a.h, a.ws, lds));
}
LOOM_TEST_KERNEL(loom_body_kda_scan)(KdaArgs a) {
  report(a.err,
         g::kdaStateScan<kThreads>(a.p, a.n, a.h, a.v0, a.v1, a.ws, lds));
}

//===----------------------------------------------------------------------===//
// Programs: the loop plus a runTask switch over one family's bodies with
// literal shapes and pointers taken from the bindings, as generated code
// does (compare targets/common/TileEmitter.cpp). Tables live in device
// memory so that nothing folds away.
//===----------------------------------------------------------------------===//

__device__ int32_t dWorkerBegin[3] = {0, 2, 4};
__device__ int32_t dWorkerTasks[4] = {0, 1, 2, 3};
__device__ int32_t dWaitBegin[5] = {0, 0, 1, 2, 3};
__device__ int32_t dWaitEvents[3] = {0, 1, 2};
__device__ int32_t dTriggerBegin[5] = {0, 1, 2, 3, 3};
__device__ int32_t dTriggerEvents[3] = {0, 1, 2};
__device__ int32_t dEventNeeds[3] = {1, 1, 1};
__device__ int32_t dTaskFunction[16];
__device__ int32_t dTaskTile[16];

template <typename T>
__device__ __forceinline__ T *bind(const LoomBinding *b, int i) {
  return static_cast<T *>(b[i].data);
}

/// A Llama-3-8B-shaped decoder step's bodies (batch <= 32 rows).
__device__ __forceinline__ int32_t decoderTask(int32_t task,
                                               const LoomKernelArgs &args,
                                               char *l) {
  const LoomBinding *b = args.bindings;
  char *ws = static_cast<char *>(args.workspace);
  const int64_t rt = b[0].dims[0], tile = dTaskTile[task];
  const int64_t m = rt < 32 ? rt : 32;
  switch (dTaskFunction[task]) {
  case 0:
    return g::rmsnormRows<kThreads>(bind<bf16>(b, 0), bind<bf16>(b, 1),
                                    bind<bf16>(b, 2), 4096, 1e-5f, tile,
                                    tile + 1 < m ? tile + 1 : m, l);
  case 1: {
    const int64_t n0 = tile * 32, n1 = n0 + 32 < 6144 ? n0 + 32 : 6144;
    return g::linearTile<kThreads>(bind<bf16>(b, 2), bind<bf16>(b, 3),
                                   static_cast<const bf16 *>(nullptr),
                                   bind<bf16>(b, 4), m, 4096, 6144, n0, n1, l);
  }
  case 2: {
    const int64_t s = tile % 4, k0 = s * 3584, k1 = k0 + 3584;
    return g::linearPartial<kThreads>(
        bind<bf16>(b, 5), bind<bf16>(b, 6), reinterpret_cast<float *>(ws), m,
        14336, 4096, (tile / 4) * 64, (tile / 4) * 64 + 64, k0, k1, l);
  }
  case 3:
    return g::linearReduce<kThreads>(
        reinterpret_cast<float *>(ws), 4, 32 * 4096, bind<bf16>(b, 0),
        bind<bf16>(b, 0), m, 4096, tile * 64, tile * 64 + 64, l);
  case 4:
    return g::rope<kThreads>(
        bind<bf16>(b, 4), bind<int32_t>(b, 7), bind<bf16>(b, 4), 32, 128, 128,
        5e5f, loom::RopeScaling{}, tile * 32,
        tile * 32 + 32 < m * 32 ? tile * 32 + 32 : m * 32, l);
  case 5:
    return g::kvAppend<kThreads>(bind<bf16>(b, 4), bind<bf16>(b, 8),
                                 bind<int32_t>(b, 9), bind<bf16>(b, 10),
                                 bind<bf16>(b, 11), 8, 128, 128, 16, 4096, tile,
                                 tile + 1 < m ? tile + 1 : m, l);
  case 6:
    return g::gqaDecodeSplit<kThreads>(
        bind<bf16>(b, 4), bind<bf16>(b, 10), bind<bf16>(b, 11),
        bind<int32_t>(b, 12), bind<int32_t>(b, 13), bind<int32_t>(b, 14),
        reinterpret_cast<float *>(ws), m, 32, 32, 8, 128, 128, 16, 4096,
        b[13].dims[0], 8,
        0.08838834764831845f, (tile / 8) / 8, (tile / 8) % 8, tile % 8, l);
  case 7:
    return g::gqaDecodeMerge<kThreads>(reinterpret_cast<const float *>(ws),
                                       bind<int32_t>(b, 14), bind<bf16>(b, 15),
                                       m, 32, 32, 8, 128, 8, tile / 8, tile % 8,
                                       l);
  case 8:
    return g::siluMul<kThreads>(
        bind<bf16>(b, 5), bind<bf16>(b, 6), bind<bf16>(b, 5), tile * 4096,
        tile * 4096 + 4096 < m * 14336 ? tile * 4096 + 4096 : m * 14336, l);
  case 9:
    return g::add<kThreads>(bind<bf16>(b, 0), bind<bf16>(b, 2),
                            bind<bf16>(b, 0), tile * 4096, tile * 4096 + 4096,
                            l);
  case 10:
    if (!g::embedding<kThreads>(bind<bf16>(b, 16), bind<int32_t>(b, 17),
                                bind<bf16>(b, 0), 128256, 4096, tile,
                                tile + 1 < m ? tile + 1 : m, l))
      return am::kBodyBadIndex;
    return 0;
  case 11:
    return g::argmaxRows<kThreads>(bind<bf16>(b, 18), bind<int32_t>(b, 19),
                                   128256, tile, tile + 1 < m ? tile + 1 : m,
                                   l);
  }
  return -1;
}

/// DeepSeek-V3 TP8-shaped MLA decode: H = 16, Dc = 512, Dp = 64, page 1,
/// 256 slots, up to 64 requests.
__device__ __forceinline__ int32_t mlaTask(int32_t task,
                                           const LoomKernelArgs &args,
                                           char *l) {
  const LoomBinding *b = args.bindings;
  char *ws = static_cast<char *>(args.workspace);
  const int64_t tile = dTaskTile[task];
  g::MlaParams<bf16> p;
  p.qNope = bind<const bf16>(b, 0);
  p.qPe = bind<const bf16>(b, 1);
  p.ckvCache = bind<const bf16>(b, 2);
  p.kpeCache = bind<const bf16>(b, 3);
  p.kvIndptr = bind<const int32_t>(b, 4);
  p.kvIndices = bind<const int32_t>(b, 5);
  p.kvLens = bind<const int32_t>(b, 6);
  p.o = bind<bf16>(b, 7);
  p.lse = bind<float>(b, 8);
  p.batch = b[0].dims[0] < 64 ? b[0].dims[0] : 64;
  p.numHeads = 16;
  p.dimCkv = 512;
  p.dimKpe = 64;
  p.pageSize = 1;
  p.numPages = 1048576;
  p.numIndices = b[5].dims[0];
  p.smScale = 0.1352337788608801f;
  float *partialO = reinterpret_cast<float *>(ws);
  float *partialLse = partialO + (256 + 64) * 16 * 512;
  if (dTaskFunction[task] == 0)
    return g::mlaSplit<kThreads>(p, tile, 256, partialO, partialLse, l);
  return g::mlaMerge<kThreads>(p, tile, 64, 256, partialO, partialLse, l);
}

/// Kimi-Linear-shaped KDA prefill: H = 32, K = V = 128, chunk 64, up to
/// 8192 tokens in up to 8 sequences.
__device__ __forceinline__ int32_t kdaTask(int32_t task,
                                           const LoomKernelArgs &args,
                                           char *l) {
  const LoomBinding *b = args.bindings;
  char *ws = static_cast<char *>(args.workspace);
  const int64_t tile = dTaskTile[task];
  g::KdaParams<bf16> p;
  p.q = bind<const bf16>(b, 0);
  p.k = bind<const bf16>(b, 1);
  p.v = bind<const bf16>(b, 2);
  p.g = bind<const bf16>(b, 3);
  p.beta = bind<const bf16>(b, 4);
  p.aLog = bind<const float>(b, 5);
  p.dtBias = bind<const float>(b, 6);
  p.cuSeqlens = bind<const int32_t>(b, 7);
  p.initialState = bind<const float>(b, 8);
  p.o = bind<bf16>(b, 9);
  p.finalState = bind<float>(b, 10);
  p.numTokens = b[0].dims[0];
  p.numSeqs = b[7].dims[0] - 1;
  p.numHeads = 32;
  p.dimK = 128;
  p.dimV = 128;
  p.chunkSize = 64;
  p.gate = g::KdaGate::Unbounded;
  p.lowerBound = -5.f;
  p.scale = 0.08838834764831845f;
  p.qkL2norm = true;
  p.maxChunks = 8192 / 64 + 8;
  float *work = reinterpret_cast<float *>(ws);
  const int64_t chunks =
      g::kdaCheckedChunks(p.cuSeqlens, p.numSeqs, 64, p.numTokens, p.maxChunks);
  if (chunks < 0)
    return 0;
  if (dTaskFunction[task] == 0) {
    const int64_t items = chunks * 32;
    int64_t i = tile * items / 256;
    const int64_t end = (tile + 1) * items / 256;
    while (i < end) {
      const int64_t head = i / chunks, c0 = i % chunks;
      const int64_t c1 = chunks < c0 + (end - i) ? chunks : c0 + (end - i);
      if (int32_t e = g::kdaIntraChunk<kThreads>(p, c0, c1, head, work, l))
        return e;
      i += c1 - c0;
    }
    return 0;
  }
  const int64_t items = p.numSeqs * 32 * 8;
  for (int64_t i = tile; i < items; i += 256) {
    const int64_t n = i / 256, head = (i / 8) % 32, vb = i % 8;
    if (int32_t e = g::kdaStateScan<kThreads>(p, n, head, vb * 128 / 8,
                                              (vb + 1) * 128 / 8, work, l))
      return e;
  }
  return 0;
}

#define LOOM_TEST_PROGRAM(name, taskFn)                                        \
  LOOM_TEST_KERNEL(name)(LoomKernelArgs args) {                                \
    am::loomPersistentLoop<kThreads>(                                          \
        args, dWorkerBegin, dWorkerTasks, dWaitBegin, dWaitEvents,             \
        dTriggerBegin, dTriggerEvents, dEventNeeds, 4, 3,                      \
        LOOM_SCHEDULE_STATIC,                                                  \
        [](int32_t task, const LoomKernelArgs &a, char *l) {                   \
          return taskFn(task, a, l);                                           \
        });                                                                    \
  }

LOOM_TEST_PROGRAM(loom_program_decoder, decoderTask)
LOOM_TEST_PROGRAM(loom_program_mla, mlaTask)
LOOM_TEST_PROGRAM(loom_program_kda, kdaTask)
