//===- ModelTest.cpp - bench/model: bytes, FLOPs, lengths, errors ---------===//
//
// The expected numbers are worked out by hand in the comments from the
// shapes (tools/frontend/BuildGraph.cpp's buffers) and the formulas in
// bench/model/README.md, not taken from the tool's output.
//
//===----------------------------------------------------------------------===//
#include "bench/model/Cost.h"
#include "bench/model/Lengths.h"
#include "bench/model/Workloads.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace {

using namespace loom::model;
namespace fs = std::filesystem;

const std::string kWorkloads = LOOM_SOURCE_DIR "/bench/workloads";
const std::string kConfigs = LOOM_SOURCE_DIR "/configs";

const WorkloadSet &realWorkloads() {
  static const WorkloadSet set = loadWorkloads(kWorkloads, kConfigs);
  return set;
}

const Workload &find(const std::string &key) {
  for (const Workload &w : realWorkloads().workloads)
    if (w.key == key)
      return w;
  ADD_FAILURE() << "no workload " << key;
  static const Workload none;
  return none;
}

TEST(Model, LoadsEveryWorkload) {
  const WorkloadSet &set = realWorkloads();
  for (const auto &d : set.errors)
    ADD_FAILURE() << d.str();
  int mla = 0, trace = 0, kda = 0, decoder = 0;
  for (const Workload &w : set.workloads) {
    mla += w.family == Family::MlaDecode;
    trace += w.set == "trace";
    kda += w.family == Family::KdaPrefill;
    decoder += w.family == Family::Decoder;
  }
  // 47 trace lines; tiers 7 + 5 + 2; 17 KDA entries; 7 decoder stacks.
  EXPECT_EQ(trace, 47);
  EXPECT_EQ(mla, 47 + 14);
  EXPECT_EQ(kda, 17);
  EXPECT_EQ(decoder, 7);
}

TEST(Model, TraceUsesDeepSeekV3Tp8Shape) {
  // bench/workloads/README.md: H = 16, Dc = 512, Dp = 64, page size 1, bf16.
  const Workload &w = find("mla_decode/trace/0/00cb2bc2-c7c7-43a1-b857-b516eb2ce061");
  EXPECT_EQ(w.mla.numHeads, 16);
  EXPECT_EQ(w.mla.headDimCkv, 512);
  EXPECT_EQ(w.mla.headDimKpe, 64);
  EXPECT_EQ(w.mla.pageSize, 1);
  EXPECT_EQ(w.mla.dtype, loom::spec::DType::BF16);
  EXPECT_EQ(w.lengths, std::vector<int64_t>{8});
}

TEST(Model, MlaTraceSingleRequest) {
  // Trace line 1: batch 1, kv_lens [8].
  Cost c = find("mla_decode/trace/0/00cb2bc2-c7c7-43a1-b857-b516eb2ce061").cost();
  EXPECT_EQ(c.bytes.kvRead, 9216);  // 8 tokens x (512 + 64) x 2 B
  EXPECT_EQ(c.bytes.inputs, 18432); // 16 heads x 576 x 2 B
  EXPECT_EQ(c.bytes.outputs, 16448); // o 16 x 512 x 2 B + lse 16 x 4 B
  EXPECT_EQ(c.bytes.meta, 44);      // indptr 2 x 4 + indices 8 x 4 + lens 4
  EXPECT_EQ(c.bytes.weights + c.bytes.kvWrite + c.bytes.stateRead +
                c.bytes.stateWrite, 0);
  EXPECT_EQ(c.bytes.total(), 44140);
  // 8 tokens x 16 heads x (2 x 576 + 2 x 512) = 128 x 2176.
  EXPECT_EQ(c.flops, 278528);
}

TEST(Model, MlaPartialLastPage) {
  // h16_ps64 entry 1: one request of 16383 tokens in 64-token pages: 256
  // pages, the last one 63 tokens; only valid tokens count.
  const Workload &w = find("mla_decode/h16_ps64/1");
  EXPECT_EQ(w.mla.pageSize, 64);
  Cost c = w.cost();
  EXPECT_EQ(c.bytes.kvRead, 18873216); // 16383 x 1152
  EXPECT_EQ(c.bytes.meta, 1036);       // indptr 8 + 256 pages x 4 + lens 4
}

TEST(Model, MlaTierHeadsAndGenerator) {
  // h128_ps64 entry 1: 16 requests of 4096, 128 heads.
  const Workload &w = find("mla_decode/h128_ps64/1");
  EXPECT_EQ(w.mla.numHeads, 128);
  EXPECT_EQ(w.lengths, std::vector<int64_t>(16, 4096));
  Cost c = w.cost();
  EXPECT_EQ(c.bytes.kvRead, 16LL * 4096 * 1152);
  EXPECT_EQ(c.bytes.inputs, 16LL * 128 * 576 * 2);
  EXPECT_EQ(c.flops, 16LL * 4096 * 128 * 2176);
}

TEST(Model, KdaSingleSequence) {
  // b1_t512_h32: T = 512, H = 32, K = V = 128, chunk 64, no initial state.
  const Workload &w = find("kda_prefill/b1_t512_h32");
  EXPECT_EQ(w.kda.chunkSize, 64);
  EXPECT_FALSE(w.kda.initialState);
  Cost c = w.cost();
  EXPECT_EQ(c.bytes.inputs, 16809984);  // q,k,v,g 4 x 512 x 32 x 128 x 2 + beta 512 x 32 x 2
  EXPECT_EQ(c.bytes.weights, 16512);    // a_log 32 x 4 + dt_bias 32 x 128 x 4
  EXPECT_EQ(c.bytes.meta, 8);           // cu_seqlens [2]
  EXPECT_EQ(c.bytes.outputs, 4194304);  // o 512 x 32 x 128 x 2
  EXPECT_EQ(c.bytes.stateRead, 0);
  EXPECT_EQ(c.bytes.stateWrite, 2097152); // 32 x 128 x 128 x 4
  EXPECT_EQ(c.bytes.total(), 23117960);
  // Per chunk and head: 10 c^2 d + 6 c d^2 + floor(c^3 / 3) with c = 64,
  // d = 128: 5242880 + 6291456 + 87381 = 11621717; 8 chunks x 32 heads.
  EXPECT_EQ(kdaChunkFlops(64, 128, 128), 11621717);
  EXPECT_EQ(c.flops, 11621717LL * 8 * 32);
}

TEST(Model, KdaInitialStateAndPartialChunk) {
  // b1_t16384_h4_h0 reads a [1, 4, 128, 128] fp32 initial state.
  Cost h0 = find("kda_prefill/b1_t16384_h4_h0").cost();
  EXPECT_EQ(h0.bytes.stateRead, 262144);
  EXPECT_EQ(h0.bytes.stateWrite, 262144);
  // 100 tokens = a chunk of 64 and one of 36:
  // c = 36: 10 x 1296 x 128 + 6 x 36 x 16384 + 46656 / 3 = 1658880 + 3538944 + 15552.
  KdaShape s{1, 128, 128, 64, false, loom::spec::DType::BF16};
  EXPECT_EQ(kdaChunkFlops(36, 128, 128), 5213376);
  EXPECT_EQ(kdaPrefillCost(s, {100}).flops, 11621717 + 5213376);
  // Two sequences: two states, three cu_seqlens entries.
  Cost two = kdaPrefillCost(s, {64, 36});
  EXPECT_EQ(two.flops, 11621717 + 5213376);
  EXPECT_EQ(two.bytes.stateWrite, 2 * 65536);
  EXPECT_EQ(two.bytes.meta, 12);
}

TEST(Model, DecoderOneLlamaLayer) {
  // llama3_8b, 1 layer, batch 1, context 1024 (hidden 4096, 32/8 heads of
  // 128, ffn 14336, bf16, page size 16).
  const Workload &w = find("decoder/llama3_8b/layers=1/batch=1/context=1024");
  Cost c = w.cost();
  // norms 2 x 4096; q, o 2 x 4096^2; k, v 2 x 1024 x 4096; MLP 3 x 14336 x 4096
  // = 8192 + 33554432 + 8388608 + 176160768 = 218112000 elements.
  EXPECT_EQ(c.bytes.weights, 436224000);
  EXPECT_EQ(c.bytes.kvRead, 4194304); // 1024 tokens x 8 x 128 x (K, V) x 2 B
  EXPECT_EQ(c.bytes.kvWrite, 4096);   // the new token's K and V
  EXPECT_EQ(c.bytes.inputs, 8192);
  EXPECT_EQ(c.bytes.outputs, 8192);
  EXPECT_EQ(c.bytes.meta, 276); // positions, slots 8 + indptr 8 + 64 pages x 4 + lens 4
  EXPECT_EQ(c.bytes.total(), 440439060);
  // 2 x 218103808 linear elements + 4 x 32 x 128 x 1024 attention.
  EXPECT_EQ(c.flops, 436207616 + 16777216);
}

TEST(Model, DecoderLlamaStackMatchesDesignRoofline) {
  // DESIGN.md: 32 layers, batch 1: roofline 3.29 ms at the measured copy
  // rate of 4.28 TB/s (weights + KV read once).
  Cost c = find("decoder/llama3_8b/layers=32/batch=1/context=1024").cost();
  double ms = double(c.bytes.total()) / 4.28e12 * 1e3;
  EXPECT_NEAR(ms, 3.29, 0.005);
}

TEST(Model, DecoderQwenHasQkNormWeights) {
  // qwen3_8b: ffn 12288 and per-head q/k norms (2 x 128 per layer).
  const Workload &w = find("decoder/qwen3_8b/layers=36/batch=1/context=2048");
  EXPECT_TRUE(w.decoder.qkNorm);
  int64_t perLayer = 2 * 4096 * 4096 + 2 * 1024 * 4096 + 3 * 12288 * 4096 +
                     2 * 4096 + 2 * 128;
  EXPECT_EQ(w.cost().bytes.weights, 36 * perLayer * 2);
}

TEST(Model, RooflinePicksTheLargerTerm) {
  loom::ChipInfo chip{"x", "x", loom::Vendor::Nvidia, 1, 32, 0, 0, 1000, 100};
  Cost c;
  c.bytes.inputs = 2000000; // 2 MB at 1000 GB/s = 2 us
  c.flops = 100000000;      // 1e8 at 100 TFLOP/s = 1 us
  Roofline r = roofline(c, chip);
  EXPECT_DOUBLE_EQ(r.memoryUs, 2.0);
  EXPECT_DOUBLE_EQ(r.computeUs, 1.0);
  EXPECT_DOUBLE_EQ(r.timeUs, 2.0);
  EXPECT_FALSE(r.computeBound);
  c.flops = 300000000;
  r = roofline(c, chip);
  EXPECT_DOUBLE_EQ(r.timeUs, 3.0);
  EXPECT_TRUE(r.computeBound);
}

TEST(Model, NormalQuantile) {
  // Python: statistics.NormalDist().inv_cdf(p).
  EXPECT_NEAR(normalQuantile(0.975), 1.9599639845400536, 1e-12);
  EXPECT_NEAR(normalQuantile(0.5 / 16), -1.862731867421651, 1e-12);
  EXPECT_NEAR(normalQuantile(0.5), 0.0, 1e-15);
}

TEST(Model, RequestLengthGenerators) {
  std::vector<int64_t> lens;
  std::string error;
  ASSERT_TRUE(expandRequestLengths("uniform:4096", 3, lens, error)) << error;
  EXPECT_EQ(lens, (std::vector<int64_t>{4096, 4096, 4096}));
  // Python, README.md's rule: min(max(floor(700 exp(z((i+0.5)/16)) + 0.5), 1), 16384).
  ASSERT_TRUE(expandRequestLengths("lognormal:700:1.0:16384", 16, lens, error));
  EXPECT_EQ(lens, (std::vector<int64_t>{109, 187, 255, 322, 392, 468, 552, 647,
                                        757, 887, 1047, 1249, 1522, 1922, 2615,
                                        4509}));
  ASSERT_TRUE(expandRequestLengths("lognormal:700:1.0:1000", 16, lens, error));
  EXPECT_EQ(lens.back(), 1000);
  ASSERT_TRUE(expandRequestLengths("normal:10:100", 4, lens, error));
  EXPECT_EQ(lens.front(), 1); // clipped: a request has at least its new token
  EXPECT_FALSE(expandRequestLengths("lognormal:700:1.0", 4, lens, error));
  EXPECT_NE(error.find("lognormal:MEDIAN:SIGMA:CLIP"), std::string::npos);
  EXPECT_FALSE(expandRequestLengths("zipf:3", 4, lens, error));
  EXPECT_NE(error.find("unknown length generator 'zipf:3'"), std::string::npos);
  ASSERT_TRUE(expandSequenceLengths("uniform:32x256", lens, error));
  EXPECT_EQ(lens, std::vector<int64_t>(32, 256));
  EXPECT_FALSE(expandSequenceLengths("uniform:32", lens, error));
}

/// A copy of bench/workloads/ with one file replaced.
class BadWorkloads : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("loom-model-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char *f : {"mla_decode_trace47.jsonl", "mla_decode_tiers.yaml",
                          "kda_prefill.yaml", "decoder.yaml"})
      fs::copy_file(kWorkloads + "/" + f, dir / f);
  }
  void TearDown() override { fs::remove_all(dir); }
  void write(const std::string &file, const std::string &text) {
    std::ofstream(dir / file) << text;
  }
  std::vector<std::string> errors() {
    std::vector<std::string> out;
    for (const auto &d : loadWorkloads(dir.string(), kConfigs).errors)
      out.push_back(d.str());
    return out;
  }
  fs::path dir;
};

TEST_F(BadWorkloads, TraceBatchMismatchHasPosition) {
  write("mla_decode_trace47.jsonl",
        "{\"batch\": 1, \"uuid\": \"a\", \"kv_lens\": [3]}\n"
        "{\"batch\": 2, \"uuid\": \"b\", \"kv_lens\": [3]}\n");
  auto e = errors();
  ASSERT_EQ(e.size(), 1u);
  // Column 38: the "[" of line 2's kv_lens.
  EXPECT_EQ(e[0], (dir / "mla_decode_trace47.jsonl").string() +
                      ":2:38: error: 'kv_lens' has 1 entries, 'batch' says 2");
}

TEST_F(BadWorkloads, TierGeneratorAndUnknownKey) {
  write("mla_decode_tiers.yaml", "tiers:\n"
                                 "  - name: t\n"
                                 "    num_heads: 16\n"
                                 "    page_size: 64\n"
                                 "    workloads:\n"
                                 "      - {batch: 4, lengths: \"zipf:3\"}\n"
                                 "      - {batch: 4, lenghts: [1, 2, 3, 4]}\n");
  auto e = errors();
  ASSERT_EQ(e.size(), 3u);
  const std::string f = (dir / "mla_decode_tiers.yaml").string();
  EXPECT_EQ(e[0].rfind(f + ":6:29: error: unknown length generator 'zipf:3'", 0), 0u)
      << e[0];
  EXPECT_EQ(e[1], f + ":7:20: error: unknown key 'lenghts' in tier 't' workload 1");
  EXPECT_EQ(e[2], f + ":7:9: error: missing key 'lengths' in tier 't' workload 1");
}

TEST_F(BadWorkloads, DecoderUnknownModel) {
  write("decoder.yaml", "workloads:\n"
                        "  - {model: llama9_1t, layers: 1, batch: 1, context: 8}\n");
  auto e = errors();
  ASSERT_GE(e.size(), 2u);
  EXPECT_NE(e[0].find("llama9_1t.yaml:1:1: error: "), std::string::npos) << e[0];
  // Column 13: the model name.
  EXPECT_EQ(e.back(), (dir / "decoder.yaml").string() +
                          ":2:13: error: no usable spec for model 'llama9_1t' (" +
                          kConfigs + "/decoder/llama9_1t.yaml)");
}

TEST_F(BadWorkloads, YamlSyntaxError) {
  write("kda_prefill.yaml", "workloads:\n  - {name: x, lengths: [1, heads: 4}\n");
  auto e = errors();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].rfind((dir / "kda_prefill.yaml").string() + ":2:", 0), 0u) << e[0];
  EXPECT_NE(e[0].find(": error: "), std::string::npos);
}

} // namespace
