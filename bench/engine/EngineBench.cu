//===- EngineBench.cu - The persistent engine against plain kernels -------===//
//
// Standalone CUDA (nvcc alone, no LLVM): the engine of every emitted NVIDIA
// kernel (kernels/nvidia/Interpreter.cuh, records of
// kernels/common/WorkerRecords.h) runs synthetic schedules beside plain
// kernels doing the same work, in one process, so each figure is a ratio
// measured in the same run (bench/engine/README.md):
//
//   empty     one no-op task per worker   vs  an empty cooperative launch of
//                                             the same grid (0 and ~200 KB
//                                             of dynamic shared memory)
//   chain     a dependency chain hopping across all SMs (per hop: the slope
//             between two chain lengths)  vs  a bare acquire/release chain of
//                                             one thread per SM
//   stream    each worker sums its share of 1 GiB as 64 KB tasks whose
//             bytes the engine prefetches  vs  the best plain streaming
//                                             reduction (several blocks/SM)
//   twophase  phase 1 keeps every worker busy for P us, phase 2 streams
//             256 MiB behind phase 1's event  vs  max(P, the stream alone)
//
// Every output is checked (integer sums of random words, exact; chain
// values) and poisoned before each timed batch. Times are CUDA events:
// `single` brackets one launch (median of many), `b2b` is the mean over
// launches queued back to back. Writes a JSON file (--json FILE) and prints
// a table.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -I<repo> \
//        bench/engine/EngineBench.cu -o loom-bench-engine
//
//===----------------------------------------------------------------------===//

#include "kernels/common/WorkerRecords.h"
#include "kernels/nvidia/Interpreter.cuh"
#include "tests/gpu/CudaSupport.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

namespace lnv = loom::nvidia;
namespace rec = loom::records;

constexpr int kThreads = 256;
constexpr int kWindowWords = 1024;

using loom::cudatest::Dev;

//===----------------------------------------------------------------------===//
// Bodies the engine runs (function = kind, tile = argument)
//===----------------------------------------------------------------------===//

enum Kind : int32_t { kNop, kLink, kSum, kSumEvictFirst, kSpin };

/// 16-byte load under an L2 policy (evict_first: the line is read once).
__device__ __forceinline__ uint4 loadWithPolicy(const uint4 *p,
                                                uint64_t policy) {
  uint4 v;
  asm volatile("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, "
               "%3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
}

/// Adds the warp's `s` (all lanes) into *sum.
__device__ __forceinline__ void addWarpSum(unsigned long long *sum,
                                           unsigned long long s) {
  for (int o = 16; o; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x % 32 == 0)
    atomicAdd(sum, s);
}

__device__ __forceinline__ uint64_t evictFirstPolicy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"
               : "=l"(policy));
  return policy;
}

struct Bodies {
  int32_t *links;          // chain: the launch number each link saw
  const uint4 *stream;     // stream: the words summed
  unsigned long long *sums; // per worker
  int64_t chunkWords;      // uint4 per kSum task
  long long spinCycles;    // kSpin

  /// Adds chunk `c`'s words into this worker's sum: 4 independent 16-byte
  /// loads in flight per thread (evict-first: marked first to leave L2).
  template <bool kEvictFirst>
  __device__ int32_t sumChunk(int32_t c) const {
    const uint4 *at = stream + int64_t(c) * chunkWords;
    const uint64_t policy = kEvictFirst ? evictFirstPolicy() : 0;
    unsigned long long s = 0;
    for (int64_t i = threadIdx.x; i < chunkWords; i += 4 * kThreads) {
      uint4 v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t k = i + j * kThreads;
        v[j] = k >= chunkWords ? make_uint4(0, 0, 0, 0)
               : kEvictFirst   ? loadWithPolicy(at + k, policy)
                               : at[k];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j)
        s += uint64_t(v[j].x) + v[j].y + v[j].z + v[j].w;
    }
    addWarpSum(sums + blockIdx.x, s);
    return 0;
  }

  __device__ int32_t operator()(int32_t kind, int32_t arg, int32_t,
                                const LoomKernelArgs &args, const LoomTaskBinding *,
                                char *) const {
    switch (kind) {
    case kLink:
      // Each link writes its launch's number (the order of the links is
      // the loop test's to check: nvidia-bodies-test --filter loop), so a
      // link that did not run in the last launch shows.
      if (threadIdx.x == 0)
        links[arg] = int32_t(
            args.control[LOOM_CONTROL_WORKERS + blockIdx.x] + 1);
      return 0;
    case kSum:
      return sumChunk<false>(arg);
    case kSumEvictFirst:
      return sumChunk<true>(arg);
    case kSpin:
      if (threadIdx.x == 0) {
        const long long until = clock64() + spinCycles;
        while (clock64() < until) {
        }
      }
      return 0;
    default:
      return 0;
    }
  }
};

__global__ void __launch_bounds__(kThreads, 1)
    engineKernel(LoomKernelArgs args, lnv::EngineSchedule s, Bodies b) {
  lnv::loomPersistentLoop<kThreads, kWindowWords, 1>(args, s, b);
}

/// The same with per-task timing (what `loomc --profile` emits): where a
/// launch's time goes inside the kernel.
__global__ void __launch_bounds__(kThreads, 1)
    profiledEngineKernel(LoomKernelArgs args, lnv::EngineSchedule s,
                         Bodies b) {
  lnv::loomProfiledLoop<kThreads, kWindowWords, 1>(args, s, b);
}

//===----------------------------------------------------------------------===//
// Plain kernels
//===----------------------------------------------------------------------===//

__global__ void emptyKernel() {}

/// An empty kernel that takes N bindings by value, as emitted kernels do
/// (DeviceAbi.h, version 4): what the parameters alone cost a launch.
template <int N>
__global__ void emptyParamKernel(const __grid_constant__ LoomBindings<N> b) {}

/// One thread per block: block b waits for flag b - 1, then raises flag b.
__global__ void bareChainKernel(unsigned *flags, int links, unsigned epoch) {
  if (threadIdx.x != 0)
    return;
  for (int i = blockIdx.x; i < links; i += gridDim.x) {
    if (i > 0) {
      unsigned v;
      do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                     : "=r"(v)
                     : "l"(flags + i - 1)
                     : "memory");
      } while (v < epoch);
    }
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flags + i),
                 "r"(epoch)
                 : "memory");
  }
}

/// The bare chain with the engine's parts added one at a time, to say where
/// the engine's hop goes: kAdd, 64-bit counters raised by a release add (the
/// engine's trigger) instead of a release store of the launch number; kBlock,
/// a block of kThreads whose leader waits while the others hold at a
/// barrier, and a second barrier before the trigger (the engine's body).
template <bool kAdd, bool kBlock>
__global__ void chainProbeKernel(unsigned long long *counters, int links,
                                 unsigned long long epoch) {
  for (int i = blockIdx.x; i < links; i += gridDim.x) {
    if (threadIdx.x == 0 && i > 0) {
      unsigned long long v;
      do {
        v = lnv::loadAcquireGpu(counters + i - 1);
      } while (v < epoch);
    }
    if (kBlock) {
      __syncthreads();
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (kAdd)
        lnv::redAddReleaseGpu(counters + i, 1);
      else
        asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(counters + i),
                     "l"(epoch)
                     : "memory");
    }
  }
}

/// Grid-stride sum of `words` uint4, 4 loads in flight per thread.
__global__ void __launch_bounds__(kThreads)
    plainSumKernel(const uint4 *stream, int64_t words,
                   unsigned long long *sums) {
  unsigned long long s = 0;
  const int64_t step = int64_t(gridDim.x) * kThreads;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < words;
       i += 4 * step) {
    uint4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      v[j] = i + j * step < words ? stream[i + j * step] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      s += uint64_t(v[j].x) + v[j].y + v[j].z + v[j].w;
  }
  addWarpSum(sums + blockIdx.x % 1024, s);
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

/// Holds the stream until the host sets the flag: launches queued behind it
/// are timed without the host's submission of them.
__global__ void gateKernel(const volatile int *flag) {
  while (*flag == 0) {
  }
}

struct Timer {
  cudaEvent_t a, b;
  int *flag = nullptr, *dFlag = nullptr;
  bool ungated = false; // --ungated: no gate (under a profiler, which
                        // serializes launches: the gate would never open)
  Timer() {
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    CUDA_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer(&dFlag, flag, 0));
  }
  /// Median of `reps` single launches and the mean of `reps` back to back,
  /// in microseconds, by events queued with the launches behind a gate (so
  /// no host time is inside); `launch` enqueues one on stream 0.
  template <typename F>
  std::pair<double, double> time(int reps, const F &launch) {
    for (int i = 0; i < 3; ++i)
      launch();
    CUDA_CHECK(cudaDeviceSynchronize());
    auto gated = [&](int n) {
      *reinterpret_cast<volatile int *>(flag) = 0;
      if (!ungated)
        gateKernel<<<1, 1>>>(dFlag);
      CUDA_CHECK(cudaEventRecord(a));
      for (int i = 0; i < n; ++i)
        launch();
      CUDA_CHECK(cudaEventRecord(b));
      *reinterpret_cast<volatile int *>(flag) = 1;
      CUDA_CHECK(cudaEventSynchronize(b));
      float ms;
      CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      return 1e3 * double(ms);
    };
    std::vector<double> singles;
    for (int i = 0; i < reps; ++i)
      singles.push_back(gated(1));
    std::sort(singles.begin(), singles.end());
    const double b2b = gated(reps) / reps;
    CUDA_CHECK(cudaGetLastError());
    return {singles[singles.size() / 2], b2b};
  }
};

//===----------------------------------------------------------------------===//
// Engine programs
//===----------------------------------------------------------------------===//

/// A schedule under construction: tasks per worker, events.
struct Program {
  int32_t workers;
  std::vector<rec::Task> tasks;
  std::vector<int32_t> worker;
  std::vector<int32_t> needs;
  int32_t event(int32_t need) {
    needs.push_back(need);
    return int32_t(needs.size()) - 1;
  }
  void task(int32_t w, Kind kind, int32_t arg, std::vector<rec::Wait> waits,
            std::vector<int32_t> triggers,
            std::vector<rec::Prefetch> prefetches = {}) {
    tasks.push_back({int32_t(tasks.size()), kind, arg, std::move(waits),
                     std::move(triggers), std::move(prefetches)});
    worker.push_back(w);
  }
};

/// The engine's device state for one program: records, counters (events,
/// queue, control words), status and abort flag in mapped host memory.
struct Engine {
  Dev<int32_t> records;
  Dev<unsigned long long> counters;
  Dev<LoomBinding> bindings;
  LoomWorkerStatus *status = nullptr;
  int32_t *abortFlag = nullptr;
  lnv::EngineSchedule schedule{};
  LoomKernelArgs args{};
  int32_t workers;
  int smem;

  static rec::StaticRecords pack(const Program &p) {
    std::vector<std::vector<const rec::Task *>> lists(p.workers);
    for (size_t t = 0; t < p.tasks.size(); ++t)
      lists[p.worker[t]].push_back(&p.tasks[t]);
    return rec::packStatic(lists);
  }

  Engine(const Program &p, void *binding, uint32_t prefetchBudget, int smemBytes)
      : Engine(p, pack(p), binding, prefetchBudget, smemBytes) {}
  Engine(const Program &p, const rec::StaticRecords &r, void *binding,
         uint32_t prefetchBudget, int smemBytes)
      : records(r.words),
        counters(p.needs.size() + 1 + LOOM_CONTROL_WORKERS + p.workers),
        bindings(1), workers(p.workers), smem(smemBytes) {
    if (r.maxRecordWords + rec::kAlignWords > kWindowWords) {
      std::fprintf(stderr, "a record does not fit the window\n");
      std::exit(2);
    }
    counters.zero();
    LoomBinding b{};
    b.data = binding;
    bindings.put({b});
    CUDA_CHECK(cudaHostAlloc(&status, workers * sizeof(LoomWorkerStatus),
                             cudaHostAllocMapped));
    CUDA_CHECK(cudaHostAlloc(&abortFlag, sizeof(int32_t), cudaHostAllocMapped));
    std::memset(status, 0, workers * sizeof(LoomWorkerStatus));
    *abortFlag = 0;
    schedule.records = records.p;
    schedule.queueOffsets = records.p;
    schedule.stride = r.stride;
    schedule.numTasks = int32_t(p.tasks.size());
    schedule.numEvents = int32_t(p.needs.size());
    schedule.mode = LOOM_SCHEDULE_STATIC;
    schedule.maxRecordWords = r.maxRecordWords;
    schedule.numBindings = 1;
    schedule.prefetchBudget = prefetchBudget;
    schedule.runtimeBinding = -1;
    args.bindings = bindings.p;
    args.events = counters.p;
    args.epoch = 0; // numbered on the device: launches need no host between
    CUDA_CHECK(cudaHostGetDevicePointer(&args.status, status, 0));
    int32_t *dAbort;
    CUDA_CHECK(cudaHostGetDevicePointer(&dAbort, abortFlag, 0));
    args.abort_flag = dAbort;
    args.timeout_cycles = 0;
    args.control = counters.p + p.needs.size() + 1;
  }
  ~Engine() {
    cudaFreeHost(status);
    cudaFreeHost(abortFlag);
  }
  void launch(const Bodies &b) {
    void *params[] = {&args, &schedule, const_cast<Bodies *>(&b)};
    void *kernel = args.profile ? reinterpret_cast<void *>(profiledEngineKernel)
                                : reinterpret_cast<void *>(engineKernel);
    CUDA_CHECK(cudaLaunchCooperativeKernel(kernel, dim3(workers),
                                           dim3(kThreads), params, smem, 0));
  }
  /// Every worker ran every launch and none reported an error.
  bool healthy(uint64_t launches) const {
    auto c = counters.get();
    const unsigned long long *control = c.data() + schedule.numEvents + 1;
    for (int32_t w = 0; w < workers; ++w)
      if (status[w].error != 0 ||
          control[LOOM_CONTROL_WORKERS + w] != launches)
        return false;
    return control[LOOM_CONTROL_FAILED] == 0;
  }
};

//===----------------------------------------------------------------------===//
// The benchmarks
//===----------------------------------------------------------------------===//

struct Row {
  std::string name, what;
  double value;       // engine
  double reference;   // plain
  double ratio;       // as the issue's figure reads (see `target`)
  std::string target; // e.g. "<= 1.3"
  bool pass;          // target met
  bool checked;       // outputs right
  std::string note;
};

std::vector<Row> rows;
int reps = 200;

void add(Row r) {
  std::printf("%-34s %10.2f %10.2f %7.3f  %-8s %s%s\n", r.name.c_str(),
              r.value, r.reference, r.ratio, r.target.c_str(),
              r.checked ? (r.pass ? "met" : "MISSED") : "WRONG OUTPUT",
              r.note.empty() ? "" : ("  " + r.note).c_str());
  rows.push_back(std::move(r));
}

int numSms() {
  int sms;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms;
}

int maxDynamicSmem() {
  int bytes;
  CUDA_CHECK(cudaDeviceGetAttribute(&bytes,
                                    cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  // The engine's static shared memory (the records window) comes first.
  return bytes - kWindowWords * 4 - 1024;
}

/// A chain of `links` tasks, link i on worker i % W waiting for link i - 1.
Program chainProgram(int W, int links, Kind body) {
  Program p{W};
  for (int32_t i = 0, prev = -1; i < links; ++i) {
    const int32_t e = p.event(1);
    std::vector<rec::Wait> waits;
    if (prev >= 0)
      waits.push_back({prev, 1});
    p.task(i % W, body, i, waits, {e});
    prev = e;
  }
  return p;
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// `runs` single launches of `p` through the profiled loop; returns each
/// launch's timing records (tasks, then workers), and the median launch
/// time by events in `us`.
std::vector<std::vector<LoomTaskTiming>> profiledRuns(int W, const Program &p,
                                                      Timer &t, int runs,
                                                      double &us) {
  Engine e(p, nullptr, 0, 0);
  Dev<LoomTaskTiming> timing(p.tasks.size() + size_t(W));
  e.args.profile = timing.p;
  Bodies b{};
  us = t.time(std::max(10, reps / 4), [&] { e.launch(b); }).first;
  std::vector<std::vector<LoomTaskTiming>> out;
  for (int r = 0; r < runs; ++r) {
    timing.zero();
    e.launch(b);
    CUDA_CHECK(cudaDeviceSynchronize());
    out.push_back(timing.get());
  }
  return out;
}

/// Where an engine launch's time goes, by the profiled loop's timestamps
/// (%globaltimer, ns): the span from the first worker's entry to the last
/// one's exit, a worker's own entry-to-exit, its entry to its first task's
/// pick, and between consecutive tasks' picks.
void profileBreakdown(int W, const Program &p, Timer &t) {
  double us;
  std::vector<double> span, worker, first, gap;
  for (const auto &v : profiledRuns(W, p, t, 20, us)) {
    uint64_t lo = ~0ull, hi = 0;
    std::vector<std::vector<uint64_t>> picks(W);
    for (size_t i = 0; i < p.tasks.size(); ++i)
      picks[p.worker[i]].push_back(v[i].pick);
    for (int w = 0; w < W; ++w) {
      const LoomTaskTiming &x = v[p.tasks.size() + w];
      lo = std::min<uint64_t>(lo, x.start);
      hi = std::max<uint64_t>(hi, x.end);
      worker.push_back(1e-3 * double(x.end - x.start));
      std::sort(picks[w].begin(), picks[w].end());
      if (!picks[w].empty())
        first.push_back(1e-3 * double(picks[w][0] - x.start));
      for (size_t k = 1; k < picks[w].size(); ++k)
        gap.push_back(1e-3 * double(picks[w][k] - picks[w][k - 1]));
    }
    span.push_back(1e-3 * double(hi - lo));
  }
  std::printf("  profiled, %zu task(s)/worker: launch %.2f us (events); "
              "inside: span %.2f, worker %.2f, entry->first pick %.2f, "
              "pick->pick %.3f us (medians)\n",
              p.tasks.size() / W, us, median(span), median(worker),
              median(first), median(gap));
}

void benchEmpty(int W, Timer &t) {
  const int big = maxDynamicSmem();
  CUDA_CHECK(cudaFuncSetAttribute(engineKernel,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  big));
  CUDA_CHECK(cudaFuncSetAttribute(emptyKernel,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  big));
  Program p{W};
  for (int w = 0; w < W; ++w)
    p.task(w, kNop, 0, {}, {});
  // Launches numbered on the device (stream-ordered: the control words),
  // and by the host (the runtime's: none), each with 0 and all the dynamic
  // shared memory a block may have.
  for (bool hostNumbered : {false, true})
    for (int smem : {0, big}) {
      Engine e(p, nullptr, 0, smem);
      Bodies b{};
      uint64_t n = 0;
      auto eng = t.time(reps, [&] {
        if (hostNumbered)
          e.args.epoch = ++n;
        e.launch(b);
      });
      auto plain = t.time(reps, [&] {
        void *none[] = {nullptr};
        CUDA_CHECK(cudaLaunchCooperativeKernel(
            reinterpret_cast<void *>(emptyKernel), dim3(W), dim3(kThreads),
            none, smem, 0));
      });
      // Host-numbered launches leave the control words alone.
      const bool ok = e.healthy(hostNumbered ? 0 : uint64_t(3 + 2 * reps));
      const std::string s = std::string(hostNumbered ? " host#" : "") +
                            (smem ? " " + std::to_string(smem / 1024) + "KB"
                                  : " 0KB");
      add({"empty single" + s, "us per launch, one launch between events",
           eng.first, plain.first, eng.first / plain.first, "<= 1.3",
           eng.first <= 1.3 * plain.first, ok, ""});
      add({"empty b2b" + s, "us per launch, back to back", eng.second,
           plain.second, eng.second / plain.second, "<= 1.3",
           eng.second <= 1.3 * plain.second, ok, ""});
    }
  // The launch cost of parameters: bindings by value, 9 (an MLA program's)
  // and 64 of them, against none.
  {
    auto paramLaunch = [&](auto kernel, auto &param) {
      return t.time(reps, [&] {
        void *params[] = {&param};
        CUDA_CHECK(cudaLaunchCooperativeKernel(
            reinterpret_cast<void *>(kernel), dim3(W), dim3(kThreads), params,
            0, 0));
      });
    };
    LoomBindings<9> b9{};
    LoomBindings<64> b64{};
    auto p9 = paramLaunch(emptyParamKernel<9>, b9);
    auto p64 = paramLaunch(emptyParamKernel<64>, b64);
    std::printf("  plain empty kernel with bindings by value: 9 (%zu B) "
                "%.2f / %.2f us, 64 (%zu B) %.2f / %.2f us (single / b2b)\n",
                sizeof b9, p9.first, p9.second, sizeof b64, p64.first,
                p64.second);
  }
  // Where the time goes: 8 no-op tasks per worker against 1 (the slope is
  // the cost of a task, the rest is the launch's own).
  Program eight{W};
  for (int k = 0; k < 8; ++k)
    for (int w = 0; w < W; ++w)
      eight.task(w, kNop, 0, {}, {});
  double perLaunch[2];
  bool ok = true;
  for (int k = 0; k < 2; ++k) {
    Engine e(k ? eight : p, nullptr, 0, 0);
    Bodies b{};
    perLaunch[k] = t.time(reps, [&] { e.launch(b); }).second;
    ok = ok && e.healthy(uint64_t(3 + 2 * reps));
  }
  const double perTask = (perLaunch[1] - perLaunch[0]) / 7;
  for (int k = 0; k < 2; ++k)
    profileBreakdown(W, k ? eight : p, t);
  char note[96];
  std::snprintf(note, sizeof note, "1 task %.2f us, 8 tasks %.2f us per launch",
                perLaunch[0], perLaunch[1]);
  add({"empty per no-op task", "us per task (b2b slope, 1 to 8 per worker)",
       perTask, 0, 0, "(info)", true, ok, note});
}

/// One chain: `laps` laps of the SMs, each link on the next worker, waiting
/// for the link before. `body` kNop (the engine alone, like the bare chain)
/// or kLink (each link also stores a word). Returns the median single-launch
/// time; `ok` says every worker ran every launch, every event counted every
/// launch, and (kLink) every link stored its launch's number.
double chainLaunch(int W, int laps, Kind body, Timer &t, bool &ok) {
  const int links = laps * W;
  const Program p = chainProgram(W, links, body);
  Engine e(p, nullptr, 0, 0);
  Dev<int32_t> linkValues(links);
  linkValues.zero();
  Bodies b{};
  b.links = linkValues.p;
  const double us = t.time(reps, [&] { e.launch(b); }).first;
  const int32_t launches = 3 + 2 * reps;
  auto counts = e.counters.get();
  ok = ok && e.healthy(uint64_t(launches)) &&
       std::all_of(counts.begin(), counts.begin() + links,
                   [&](unsigned long long c) { return c == uint64_t(launches); });
  if (body == kLink) {
    auto v = linkValues.get();
    ok = ok && std::all_of(v.begin(), v.end(),
                           [&](int32_t x) { return x == launches; });
  }
  return us;
}

void benchChain(int W, Timer &t) {
  // Per hop: the slope between chains of 1 and 6 laps of the SMs, so the
  // launch itself drops out.
  const int laps[2] = {1, 6};
  const double hops = double(laps[1] - laps[0]) * W;
  bool ok = true;
  double bare[2];
  for (int k = 0; k < 2; ++k) {
    const int links = laps[k] * W;
    Dev<unsigned> flags(links);
    flags.zero();
    unsigned epoch = 0;
    bare[k] = t.time(reps, [&] {
                bareChainKernel<<<W, 32>>>(flags.p, links, ++epoch);
              }).first;
  }
  const double bareHop = (bare[1] - bare[0]) / hops;
  {
    // The engine's parts on the bare chain (chainProbeKernel).
    auto probe = [&](auto kernel, int threads) {
      double us[2];
      for (int k = 0; k < 2; ++k) {
        const int links = laps[k] * W;
        Dev<unsigned long long> c(links);
        c.zero();
        unsigned long long epoch = 0;
        us[k] = t.time(reps, [&] {
                  kernel<<<W, threads>>>(c.p, links, ++epoch);
                }).first;
      }
      return (us[1] - us[0]) / hops;
    };
    std::printf("  bare chain per hop: store %.3f, add %.3f, add + %d-thread "
                "block and 2 barriers %.3f us\n",
                probe(chainProbeKernel<false, false>, 32),
                probe(chainProbeKernel<true, false>, 32), kThreads,
                probe(chainProbeKernel<true, true>, kThreads));
  }
  {
    // A hop's parts by the profiled loop: a link's end (before its trigger)
    // to the next link's start (its wait over), and start to end (the
    // barriers around its body).
    const Program p = chainProgram(W, laps[1] * W, kNop);
    double us;
    std::vector<double> handoff, run;
    for (const auto &v : profiledRuns(W, p, t, 5, us))
      for (size_t i = 1; i < p.tasks.size(); ++i) {
        handoff.push_back(1e-3 * (double(v[i].start) - double(v[i - 1].end)));
        run.push_back(1e-3 * double(v[i].end - v[i].start));
      }
    std::printf("  profiled chain: launch %.1f us; per hop: end->next start "
                "%.3f us, start->end %.3f us (medians)\n",
                us, median(handoff), median(run));
  }
  {
    // Shorter chains: no worker waits long enough (~0.5 ms) to publish.
    const double a = chainLaunch(W, 1, kNop, t, ok);
    const double b = chainLaunch(W, 3, kNop, t, ok);
    std::printf("  engine chain per hop over 1..3 laps: %.3f us\n",
                (b - a) / (2.0 * W));
  }
  for (Kind body : {kNop, kLink}) {
    const double a = chainLaunch(W, laps[0], body, t, ok);
    const double b = chainLaunch(W, laps[1], body, t, ok);
    const double hop = (b - a) / hops;
    char note[128];
    std::snprintf(note, sizeof note, "bare %.3f us/hop; launches %.1f/%.1f us",
                  bareHop, a, b);
    if (body == kNop)
      add({"chain per hop", "us per dependency hop (slope), no-op bodies", hop,
           bareHop, hop, "<= 0.75", hop <= 0.75, ok, note});
    else
      add({"chain per hop, storing bodies",
           "us per hop (slope), each body stores a word first", hop, bareHop,
           hop, "(info)", true, ok, note});
  }
}

/// Sum of all words, as the kernels compute it (uint64, wrapping).
unsigned long long hostSum(const std::vector<uint4> &v, size_t words) {
  unsigned long long s = 0;
  for (size_t i = 0; i < words; ++i)
    s += uint64_t(v[i].x) + v[i].y + v[i].z + v[i].w;
  return s;
}

/// The engine's streaming program over `words` uint4: each worker's share
/// as tasks of `chunk` uint4 that prefetch their bytes; with `spinUs` > 0 a
/// phase before it keeps every worker busy that long and every stream task
/// waits for it.
Program streamProgram(int W, int64_t words, int64_t chunk, double spinUs,
                      Kind sum = kSum) {
  Program p{W};
  const int64_t chunks = words / chunk;
  int32_t phase = -1;
  if (spinUs > 0) {
    phase = p.event(W);
    for (int w = 0; w < W; ++w)
      p.task(w, kSpin, 0, {}, {phase});
  }
  for (int64_t c = 0; c < chunks; ++c) {
    std::vector<rec::Wait> waits;
    if (phase >= 0)
      waits.push_back({phase, W});
    p.task(int32_t(c % W), sum, int32_t(c), waits, {},
           {{0, c * chunk * 16, chunk * 16, 1, 0}});
  }
  return p;
}

struct StreamResult {
  double us;
  bool ok;
};

StreamResult runStream(const Program &p, const Dev<uint4> &data, uint32_t budget,
                       int64_t chunk, long long spinCycles,
                       unsigned long long want, Timer &t) {
  Engine e(p, data.p, budget, 0);
  Dev<unsigned long long> sums(p.workers);
  sums.zero();
  Bodies b{};
  b.stream = data.p;
  b.sums = sums.p;
  b.chunkWords = chunk;
  b.spinCycles = spinCycles;
  const int n = std::max(10, reps / 10);
  auto r = t.time(n, [&] { e.launch(b); });
  auto s = sums.get();
  unsigned long long got = 0;
  for (unsigned long long x : s)
    got += x;
  const bool ok = e.healthy(uint64_t(3 + 2 * n)) &&
                  got == want * uint64_t(3 + 2 * n);
  return {r.first, ok};
}

double plainStream(const Dev<uint4> &data, int64_t words, int blocks,
                   unsigned long long want, bool &ok, Timer &t) {
  Dev<unsigned long long> sums(1024);
  sums.zero();
  const int n = std::max(10, reps / 10);
  auto r = t.time(n, [&] {
    plainSumKernel<<<blocks, kThreads>>>(data.p, words, sums.p);
  });
  auto s = sums.get();
  unsigned long long got = 0;
  for (unsigned long long x : s)
    got += x;
  ok = ok && got == want * uint64_t(3 + 2 * n);
  return r.first;
}

void benchStream(int W, Timer &t, uint32_t budget, int clockKHz) {
  const int64_t words = (int64_t(1) << 30) / 16; // 1 GiB
  std::mt19937 rng(12345);
  std::vector<uint4> host(words);
  for (auto &v : host)
    v = make_uint4(rng(), rng(), rng(), rng());
  Dev<uint4> data(host);
  const unsigned long long wantAll = hostSum(host, words);
  const int64_t chunk = (64 << 10) / 16;

  // The best plain reduction over blocks per SM, and one block per SM.
  bool ok = true;
  double best = 1e30;
  int bestBlocks = 0;
  for (int perSm : {1, 2, 4, 8}) {
    double us = plainStream(data, words, perSm * W, wantAll, ok, t);
    std::printf("  plain stream, %d block(s)/SM: %.1f us, %.2f TB/s\n", perSm,
                us, 1e-6 * 16 * words / us);
    if (us < best) {
      best = us;
      bestBlocks = perSm;
    }
  }
  const double plainOne = plainStream(data, words, W, wantAll, ok, t);

  const uint32_t budgets[] = {0u, 64u << 10, 128u << 10, budget};
  for (Kind sum : {kSum, kSumEvictFirst}) {
    Program p = streamProgram(W, words, chunk, 0, sum);
    for (uint32_t b : budgets) {
      StreamResult r = runStream(p, data, b, chunk, 0, wantAll, t);
      char note[160];
      std::snprintf(
          note, sizeof note,
          "%.2f TB/s vs %.2f (%d blocks/SM); 1 block/SM plain %.2f TB/s",
          1e-6 * 16 * words / r.us, 1e-6 * 16 * words / best, bestBlocks,
          1e-6 * 16 * words / plainOne);
      const double share = best / r.us;
      add({std::string("stream 1GiB") +
               (sum == kSumEvictFirst ? " evict-first" : "") + ", prefetch " +
               std::to_string(b / 1024) + "KB",
           "us; ratio = plain best / engine (bandwidth share)", r.us, best,
           share, ">= 0.92", share >= 0.92, ok && r.ok, note});
    }
  }

  // Two phases: 256 MiB behind a compute phase of P us. The floor is the
  // larger of phase 1 alone and the fastest the engine streams 256 MiB
  // alone (over the prefetch budgets).
  const int64_t words2 = (int64_t(256) << 20) / 16;
  const unsigned long long want2 = hostSum(host, words2);
  Program alone = streamProgram(W, words2, chunk, 0);
  double streamAlone = 1e30;
  bool aloneOk = true;
  for (uint32_t b : budgets) {
    const StreamResult s = runStream(alone, data, b, chunk, 0, want2, t);
    streamAlone = std::min(streamAlone, s.us);
    aloneOk = aloneOk && s.ok;
  }
  for (double spinUs : {5.0, 10.0, 20.0}) {
    const long long cycles = (long long)(spinUs * clockKHz / 1e3);
    Program two = streamProgram(W, words2, chunk, spinUs);
    Program one{W}; // phase 1 alone
    const int32_t e = one.event(W);
    for (int w = 0; w < W; ++w)
      one.task(w, kSpin, 0, {}, {e});
    Engine pe(one, nullptr, 0, 0);
    Bodies pb{};
    pb.spinCycles = cycles;
    const double phase1 =
        t.time(std::max(10, reps / 10), [&] { pe.launch(pb); }).first;
    for (uint32_t b : budgets) {
      StreamResult r = runStream(two, data, b, chunk, cycles, want2, t);
      const double floor = std::max(phase1, streamAlone);
      char note[160];
      std::snprintf(note, sizeof note,
                    "phase 1 alone %.1f us, stream alone %.1f us, sum %.1f us",
                    phase1, streamAlone, phase1 + streamAlone);
      add({"twophase P=" + std::to_string(int(spinUs)) + "us prefetch " +
               std::to_string(b / 1024) + "KB",
           "us; ratio = time / max(phase 1, stream)", r.us, floor,
           r.us / floor, "<= 1.1", r.us <= 1.1 * floor, r.ok && aloneOk,
           note});
    }
  }
}

void writeJson(const char *path, const char *device, int W, uint32_t budget) {
  FILE *f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", path);
    std::exit(2);
  }
  std::fprintf(f, "{\n  \"device\": \"%s\",\n  \"workers\": %d,\n"
                  "  \"prefetch_budget_bytes\": %u,\n  \"reps\": %d,\n"
                  "  \"rows\": [\n", device, W, budget, reps);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &r = rows[i];
    std::fprintf(f,
                 "    {\"name\": \"%s\", \"what\": \"%s\", \"engine\": %.4f, "
                 "\"reference\": %.4f, \"ratio\": %.4f, \"target\": \"%s\", "
                 "\"met\": %s, \"checked\": %s, \"note\": \"%s\"}%s\n",
                 r.name.c_str(), r.what.c_str(), r.value, r.reference, r.ratio,
                 r.target.c_str(), r.pass ? "true" : "false",
                 r.checked ? "true" : "false", r.note.c_str(),
                 i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
}

} // namespace

int main(int argc, char **argv) {
  const char *json = nullptr;
  std::string only;
  bool ungated = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--ungated"))
      ungated = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--json FILE] [--reps N] "
                   "[--only empty|chain|stream|ncu] [--ungated]\n",
                   argv[0]);
      return 2;
    }
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int W = numSms();
  int clockKHz = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&clockKHz, cudaDevAttrClockRate, 0));
  // The emitter's default (targets/nvidia/EmitCuda.cpp): half the L2 over
  // the workers.
  const uint32_t budget = uint32_t(prop.l2CacheSize / 2 / W) / 16 * 16;
  std::printf("%s, %d SMs, L2 %d KB, clock %d MHz; prefetch budget %u B per "
              "worker\n",
              prop.name, W, prop.l2CacheSize / 1024, clockKHz / 1000, budget);
  std::printf("%-34s %10s %10s %7s  %-8s %s\n", "benchmark", "engine",
              "plain", "ratio", "target", "");
  Timer t;
  t.ungated = ungated;
  if (only == "ncu") {
    // For a profiler: 10 launches of one no-op task per worker, then 10 of
    // eight, then 10 of a chain (`ncu -k regex:engineKernel --launch-skip
    // 13 ...` picks an eight-task launch).
    for (int k : {1, 8, 0}) {
      // k = 0: a chain of 3 laps of the SMs (launch-skip 23).
      Program p = chainProgram(W, k == 0 ? 3 * W : 0, kNop);
      for (int i = 0; i < k; ++i)
        for (int w = 0; w < W; ++w)
          p.task(w, kNop, 0, {}, {});
      Engine e(p, nullptr, 0, 0);
      Bodies b{};
      for (int i = 0; i < 10; ++i)
        e.launch(b);
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    return 0;
  }
  if (only.empty() || only == "empty")
    benchEmpty(W, t);
  if (only.empty() || only == "chain")
    benchChain(W, t);
  if (only.empty() || only == "stream")
    benchStream(W, t, budget, clockKHz);
  if (json)
    writeJson(json, prop.name, W, budget);
  bool ok = true;
  for (const Row &r : rows)
    ok = ok && r.checked;
  return ok ? 0 : 1;
}
