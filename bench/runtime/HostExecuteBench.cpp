//===- HostExecuteBench.cpp - The host target running a compiled spec ----===//
//
// execute/kda_prefill/<spec>/tokens:T: one packed sequence of T tokens through
// a KDA prefill program that loomc compiled for the host target at build
// time (bench/runtime/CMakeLists.txt, LOOM_BENCH_HOST_ARTIFACT), run by loomrt
// on CPU threads: launch + synchronize per iteration, wall time.
//
// Inputs follow tools/check/KdaCheck.cpp's realistic regime (q, k, v, g_raw
// ~ N(0, 1), A = e^a_log in [1, 16], dt_bias in [-5, -2], beta_raw ~
// N(0, 1.5)), drawn once with a fixed seed. Correctness is the host tests'
// job (ctest -L host); here the outputs are only checked to be finite after
// the first launch, so a broken artifact cannot post a time.
//
// LOOM_BENCH_KDA_SPEC / LOOM_BENCH_KDA_ARTIFACT override the spec and the
// .host.so; without an artifact the benchmark is skipped with the reason.
//
//===----------------------------------------------------------------------===//
#include "loom/loomrt.hpp"
#include "tools/spec/Spec.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

std::string fromEnv(const char *name, const char *fallback) {
  const char *value = std::getenv(name);
  return value && *value ? value : fallback;
}

uint16_t toBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return uint16_t(bits >> 16);
}

float fromBf16(uint16_t x) {
  uint32_t bits = uint32_t(x) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Host memory of one buffer (the host device's memory is host memory).
struct Buffer {
  loomrt::Memory memory;
  std::vector<int64_t> dims;
  int32_t elem = 0;
  int64_t count = 0;
};

void executeKda(benchmark::State &state, int64_t tokens) {
  const std::string specPath = fromEnv("LOOM_BENCH_KDA_SPEC", LOOM_BENCH_KDA_SPEC);
  const std::string artifact =
      fromEnv("LOOM_BENCH_KDA_ARTIFACT", LOOM_BENCH_KDA_ARTIFACT);
  if (artifact.empty() || !std::filesystem::exists(artifact)) {
    state.SkipWithError(("no host artifact '" + artifact +
                         "' (configure with LOOM_BENCH_HOST_ARTIFACT=ON or set "
                         "LOOM_BENCH_KDA_ARTIFACT)").c_str());
    return;
  }
  loom::spec::LoadResult loaded = loom::spec::loadSpecFile(specPath);
  const auto *kda = loaded.ok()
                        ? std::get_if<loom::spec::KdaPrefillSpec>(&loaded.spec->family)
                        : nullptr;
  if (!kda) {
    state.SkipWithError(("not a loadable kda_prefill spec: " + specPath).c_str());
    return;
  }
  if (tokens > kda->maxTokens) {
    state.SkipWithError("more tokens than the spec's max_tokens");
    return;
  }
  const int64_t H = kda->numHeads, K = kda->headDimK, V = kda->headDimV;
  const int64_t seqs = 1;
  try {
    loomrt::Device device("host");
    std::map<std::string, Buffer> buffers;
    loomrt::Program program = device.load(artifact);
    // Leading dims of the dynamic buffers (KdaCheck.cpp's layout).
    auto leading = [&](const std::string &name) -> int64_t {
      if (name == "cu_seqlens")
        return seqs + 1;
      if (name == "initial_state" || name == "final_state")
        return seqs;
      return tokens;
    };
    std::mt19937_64 rng(20261130);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_real_distribution<float> uniform(0.f, 1.f);
    for (int32_t i = 0; i < program.numBuffers(); ++i) {
      const LoomBufferDesc &d = program.buffer(i);
      Buffer b;
      b.elem = d.elem;
      b.count = 1;
      for (int32_t r = 0; r < d.rank; ++r) {
        b.dims.push_back(d.dims[r] < 0 ? leading(d.name) : d.dims[r]);
        b.count *= b.dims.back();
      }
      b.memory = device.alloc(size_t(b.count) * loomrt_elem_bytes(d.elem));
      std::string name = d.name;
      if (d.elem == LOOM_ELEM_BF16) {
        float sigma = name == "beta" ? 1.5f : 1.f;
        auto *p = b.memory.as<uint16_t>();
        for (int64_t j = 0; j < b.count; ++j)
          p[j] = toBf16(sigma * normal(rng));
      } else if (d.elem == LOOM_ELEM_F32) {
        auto *p = b.memory.as<float>();
        for (int64_t j = 0; j < b.count; ++j)
          p[j] = name == "a_log"     ? std::log(1.f + 15.f * uniform(rng))
                 : name == "dt_bias" ? -5.f + 3.f * uniform(rng)
                                     : normal(rng);
      } else if (name == "cu_seqlens") {
        auto *p = b.memory.as<int32_t>();
        p[0] = 0;
        p[1] = int32_t(tokens);
      }
      program.bind(i, b.memory.get(), b.dims);
      buffers.emplace(name, std::move(b));
    }
    program.run();
    const Buffer &o = buffers.at("o");
    for (int64_t j = 0; j < o.count; ++j)
      if (!std::isfinite(fromBf16(o.memory.as<uint16_t>()[j]))) {
        state.SkipWithError("the artifact wrote a non-finite o");
        return;
      }
    for (auto _ : state)
      program.run();
    state.SetItemsProcessed(state.iterations() * tokens);
    state.counters["heads"] = double(H);
    state.counters["K"] = double(K);
    state.counters["V"] = double(V);
  } catch (const loomrt::Error &e) {
    state.SkipWithError(e.what());
  }
}

void registerAll() {
  std::string spec =
      std::filesystem::path(fromEnv("LOOM_BENCH_KDA_SPEC", LOOM_BENCH_KDA_SPEC))
          .stem()
          .string();
  for (int64_t tokens : {64, 512, 2048})
    benchmark::RegisterBenchmark(
        ("execute/kda_prefill/" + spec + "/tokens:" + std::to_string(tokens)).c_str(),
        executeKda, tokens)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
}

const bool registered = (registerAll(), true);

} // namespace
