//===- SpecLoaderTest.cpp - Tests for the YAML kernel-spec loader ---------===//
//
// Two halves: every shipped config loads with exactly the shapes it claims,
// and every class of mistake produces its message at the right line:column.
// Bad specs are built from small valid bases by replacing or appending lines,
// so the position of each edit is easy to read off the base's line numbers.
//
//===----------------------------------------------------------------------===//
#include "tools/spec/Spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace loom::spec;

namespace {

const std::string kSourceDir = LOOM_SOURCE_DIR;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Minimal valid spec per family. Line numbers matter: tests quote them.
const std::string kMla = // value column 14 for 13-character keys
    "name: t\n"          // 1
    "mla_decode:\n"      // 2
    "  num_heads: 16\n"  // 3
    "  page_size: 64\n"  // 4
    "  sm_scale: 0.1\n"  // 5
    "  max_batch: 8\n"   // 6
    "  max_pages: 64\n"; // 7

const std::string kKda =   //
    "name: t\n"            // 1
    "kda_prefill:\n"       // 2
    "  num_heads: 4\n"     // 3
    "  gate: unbounded\n"  // 4
    "  max_tokens: 1024\n" // 5
    "  max_seqs: 8\n";     // 6

const std::string kDecoder = //
    "name: t\n"              // 1
    "decoder:\n"             // 2
    "  layers: 2\n"          // 3
    "  hidden: 256\n"        // 4
    "  num_q_heads: 4\n"     // 5
    "  num_kv_heads: 2\n"    // 6
    "  head_dim: 64\n"       // 7
    "  ffn: 512\n"           // 8
    "  max_batch: 4\n"       // 9
    "  max_pages: 64\n";     // 10

/// `text` with its only occurrence of `from` replaced by `to`.
std::string replaced(const std::string &text, const std::string &from,
                     const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in base";
  EXPECT_EQ(text.find(from, at + 1), std::string::npos)
      << "'" << from << "' occurs twice";
  if (at == std::string::npos)
    return text;
  return text.substr(0, at) + to + text.substr(at + from.size());
}

/// "line:col: message" for each diagnostic: position and text, not the file.
std::vector<std::string> errorsOf(const LoadResult &result) {
  std::vector<std::string> lines;
  for (const Diagnostic &d : result.errors)
    lines.push_back(std::to_string(d.line) + ":" + std::to_string(d.column) +
                    ": " + d.message);
  return lines;
}

/// Parses `text` and returns its errors; a failed parse must carry no spec.
std::vector<std::string> errorsIn(const std::string &text) {
  LoadResult result = parseSpec(text, "test.yaml");
  EXPECT_EQ(result.spec.has_value(), result.errors.empty());
  EXPECT_EQ(result.ok(), result.errors.empty());
  for (const Diagnostic &d : result.errors)
    EXPECT_EQ(d.file, "test.yaml");
  return errorsOf(result);
}

using Errors = std::vector<std::string>;

/// Parses a text that must be valid.
Spec parseValid(const std::string &text) {
  LoadResult result = parseSpec(text, "test.yaml");
  EXPECT_TRUE(result.ok()) << ::testing::PrintToString(errorsOf(result));
  return result.spec.value_or(Spec());
}

LoadResult loadConfig(const std::string &relative) {
  LoadResult result = loadSpecFile(kSourceDir + "/configs/" + relative);
  EXPECT_TRUE(result.ok()) << relative << ": "
                           << ::testing::PrintToString(errorsOf(result));
  return result;
}

const std::string kAllChips = "h100, h200, b200, mi350x, host";
const std::vector<std::string> kAllTargets = {"h100", "h200", "b200", "mi350x",
                                              "host"};

//===----------------------------------------------------------------------===//
// Shipped configs
//===----------------------------------------------------------------------===//

TEST(SpecConfigs, EveryConfigLoads) {
  namespace fs = std::filesystem;
  int count = 0;
  for (const auto &entry :
       fs::recursive_directory_iterator(kSourceDir + "/configs")) {
    if (entry.path().extension() != ".yaml")
      continue;
    ++count;
    LoadResult result = loadSpecFile(entry.path().string());
    EXPECT_TRUE(result.ok())
        << entry.path() << ": " << ::testing::PrintToString(errorsOf(result));
    // The family folder names the family, and the file stem the kernel.
    if (result.ok()) {
      EXPECT_EQ(familyName(*result.spec),
                entry.path().parent_path().filename().string());
      EXPECT_EQ(result.spec->name, entry.path().stem().string());
    }
  }
  EXPECT_GE(count, 7);
}

TEST(SpecConfigs, DeepSeekV3Tp8) {
  LoadResult result = loadConfig("mla_decode/deepseek_v3_tp8.yaml");
  ASSERT_TRUE(result.ok());
  const Spec &spec = *result.spec;
  EXPECT_EQ(spec.name, "deepseek_v3_tp8");
  EXPECT_FALSE(spec.description.empty());
  EXPECT_EQ(spec.targets, kAllTargets);
  ASSERT_TRUE(std::holds_alternative<MlaDecodeSpec>(spec.family));
  const auto &mla = std::get<MlaDecodeSpec>(spec.family);
  EXPECT_EQ(mla.numHeads, 16);
  EXPECT_EQ(mla.headDimCkv, 512);
  EXPECT_EQ(mla.headDimKpe, 64);
  EXPECT_EQ(mla.pageSize, 1);
  EXPECT_DOUBLE_EQ(mla.smScale, 0.1352337747812271);
  EXPECT_EQ(mla.maxBatch, 128);
  EXPECT_EQ(mla.maxPages, 1048576);
  EXPECT_EQ(mla.dtype, DType::BF16);
}

TEST(SpecConfigs, DeepSeekV3Tp8PageSize64) {
  LoadResult result = loadConfig("mla_decode/deepseek_v3_tp8_ps64.yaml");
  ASSERT_TRUE(result.ok());
  const Spec &spec = *result.spec;
  EXPECT_EQ(spec.name, "deepseek_v3_tp8_ps64");
  EXPECT_TRUE(spec.targets.empty());
  const auto &mla = std::get<MlaDecodeSpec>(spec.family);
  EXPECT_EQ(mla.numHeads, 16);
  EXPECT_EQ(mla.headDimCkv, 512);
  EXPECT_EQ(mla.headDimKpe, 64);
  EXPECT_EQ(mla.pageSize, 64);
  EXPECT_DOUBLE_EQ(mla.smScale, 0.1352337747812271);
  EXPECT_EQ(mla.maxBatch, 128);
  EXPECT_EQ(mla.maxPages, 16384);
  EXPECT_EQ(mla.dtype, DType::BF16);
}

TEST(SpecConfigs, DeepSeekV3DataParallel) {
  LoadResult result = loadConfig("mla_decode/deepseek_v3_dp.yaml");
  ASSERT_TRUE(result.ok());
  const Spec &spec = *result.spec;
  EXPECT_EQ(spec.name, "deepseek_v3_dp");
  const auto &mla = std::get<MlaDecodeSpec>(spec.family);
  EXPECT_EQ(mla.numHeads, 128);
  EXPECT_EQ(mla.headDimCkv, 512); // default
  EXPECT_EQ(mla.headDimKpe, 64);  // default
  EXPECT_EQ(mla.pageSize, 64);
  EXPECT_DOUBLE_EQ(mla.smScale, 0.1352337747812271);
  EXPECT_EQ(mla.maxBatch, 128);
  EXPECT_EQ(mla.maxPages, 65536);
  EXPECT_EQ(mla.dtype, DType::BF16);
}

TEST(SpecConfigs, KimiLinear48B) {
  LoadResult result = loadConfig("kda_prefill/kimi_linear_48b.yaml");
  ASSERT_TRUE(result.ok());
  const Spec &spec = *result.spec;
  EXPECT_EQ(spec.name, "kimi_linear_48b");
  ASSERT_TRUE(std::holds_alternative<KdaPrefillSpec>(spec.family));
  const auto &kda = std::get<KdaPrefillSpec>(spec.family);
  EXPECT_EQ(kda.numHeads, 32);
  EXPECT_EQ(kda.headDimK, 128);
  EXPECT_EQ(kda.headDimV, 128);
  EXPECT_EQ(kda.gate, KdaGate::Unbounded);
  EXPECT_FALSE(kda.lowerBound.has_value());
  EXPECT_EQ(kda.chunkSize, 64);
  EXPECT_TRUE(kda.qkL2Norm);
  EXPECT_TRUE(kda.initialState);
  EXPECT_FALSE(kda.scale.has_value());
  EXPECT_EQ(kda.maxTokens, 131072);
  EXPECT_EQ(kda.maxSeqs, 64);
  EXPECT_EQ(kda.dtype, DType::BF16);
}

TEST(SpecConfigs, KimiK3Tp8) {
  LoadResult result = loadConfig("kda_prefill/kimi_k3_tp8.yaml");
  ASSERT_TRUE(result.ok());
  const Spec &spec = *result.spec;
  EXPECT_EQ(spec.name, "kimi_k3_tp8");
  EXPECT_EQ(spec.targets, kAllTargets);
  const auto &kda = std::get<KdaPrefillSpec>(spec.family);
  EXPECT_EQ(kda.numHeads, 12);
  EXPECT_EQ(kda.headDimK, 128);
  EXPECT_EQ(kda.headDimV, 128);
  EXPECT_EQ(kda.gate, KdaGate::Bounded);
  ASSERT_TRUE(kda.lowerBound.has_value());
  EXPECT_DOUBLE_EQ(*kda.lowerBound, -5.0);
  EXPECT_EQ(kda.chunkSize, 64); // default
  EXPECT_TRUE(kda.qkL2Norm);    // default
  EXPECT_TRUE(kda.initialState);
  EXPECT_FALSE(kda.scale.has_value());
  EXPECT_EQ(kda.maxTokens, 131072);
  EXPECT_EQ(kda.maxSeqs, 64);
}

TEST(SpecConfigs, Llama3_8B) {
  LoadResult result = loadConfig("decoder/llama3_8b.yaml");
  ASSERT_TRUE(result.ok());
  const Spec &spec = *result.spec;
  EXPECT_EQ(spec.name, "llama3_8b");
  EXPECT_EQ(spec.targets, kAllTargets);
  ASSERT_TRUE(std::holds_alternative<DecoderSpec>(spec.family));
  const auto &dec = std::get<DecoderSpec>(spec.family);
  EXPECT_EQ(dec.layers, 32);
  EXPECT_EQ(dec.hidden, 4096);
  EXPECT_EQ(dec.numQHeads, 32);
  EXPECT_EQ(dec.numKvHeads, 8);
  EXPECT_EQ(dec.headDim, 128);
  EXPECT_EQ(dec.ffn, 14336);
  EXPECT_DOUBLE_EQ(dec.rmsEps, 1e-5);
  EXPECT_DOUBLE_EQ(dec.ropeTheta, 500000);
  EXPECT_FALSE(dec.qkNorm);
  EXPECT_EQ(dec.pageSize, 16);
  EXPECT_EQ(dec.maxBatch, 32);
  EXPECT_EQ(dec.maxPages, 4096);
  EXPECT_EQ(dec.vocab, 128256);
  EXPECT_FALSE(dec.head);
  EXPECT_EQ(dec.dtype, DType::BF16);
}

TEST(SpecConfigs, Qwen3_8B) {
  LoadResult result = loadConfig("decoder/qwen3_8b.yaml");
  ASSERT_TRUE(result.ok());
  const Spec &spec = *result.spec;
  EXPECT_EQ(spec.name, "qwen3_8b");
  const auto &dec = std::get<DecoderSpec>(spec.family);
  EXPECT_EQ(dec.layers, 36);
  EXPECT_EQ(dec.hidden, 4096);
  EXPECT_EQ(dec.numQHeads, 32);
  EXPECT_EQ(dec.numKvHeads, 8);
  EXPECT_EQ(dec.headDim, 128);
  EXPECT_EQ(dec.ffn, 12288);
  EXPECT_DOUBLE_EQ(dec.rmsEps, 1e-6);
  EXPECT_DOUBLE_EQ(dec.ropeTheta, 1000000);
  EXPECT_TRUE(dec.qkNorm);
  EXPECT_EQ(dec.pageSize, 16);
  EXPECT_EQ(dec.maxBatch, 32);
  EXPECT_EQ(dec.maxPages, 4096);
  EXPECT_EQ(dec.vocab, 151936);
  EXPECT_FALSE(dec.head);
}

//===----------------------------------------------------------------------===//
// Valid inputs: defaults and accepted spellings
//===----------------------------------------------------------------------===//

TEST(SpecValid, MlaDefaults) {
  Spec spec = parseValid(kMla);
  EXPECT_EQ(std::string(familyName(spec)), "mla_decode");
  EXPECT_TRUE(spec.description.empty());
  EXPECT_TRUE(spec.targets.empty());
  const auto &mla = std::get<MlaDecodeSpec>(spec.family);
  EXPECT_EQ(mla.numHeads, 16);
  EXPECT_EQ(mla.headDimCkv, 512);
  EXPECT_EQ(mla.headDimKpe, 64);
  EXPECT_EQ(mla.pageSize, 64);
  EXPECT_DOUBLE_EQ(mla.smScale, 0.1);
  EXPECT_EQ(mla.dtype, DType::BF16);
}

TEST(SpecValid, KdaDefaults) {
  Spec spec = parseValid(kKda);
  EXPECT_EQ(std::string(familyName(spec)), "kda_prefill");
  const auto &kda = std::get<KdaPrefillSpec>(spec.family);
  EXPECT_EQ(kda.headDimK, 128);
  EXPECT_EQ(kda.headDimV, 128);
  EXPECT_EQ(kda.chunkSize, 64);
  EXPECT_TRUE(kda.qkL2Norm);
  EXPECT_FALSE(kda.initialState);
  EXPECT_FALSE(kda.lowerBound.has_value());
  EXPECT_FALSE(kda.scale.has_value());
  EXPECT_EQ(kda.dtype, DType::BF16);
}

TEST(SpecValid, DecoderDefaults) {
  Spec spec = parseValid(kDecoder);
  EXPECT_EQ(std::string(familyName(spec)), "decoder");
  const auto &dec = std::get<DecoderSpec>(spec.family);
  EXPECT_DOUBLE_EQ(dec.rmsEps, 1e-5);
  EXPECT_DOUBLE_EQ(dec.ropeTheta, 10000);
  EXPECT_FALSE(dec.qkNorm);
  EXPECT_EQ(dec.pageSize, 16);
  EXPECT_EQ(dec.vocab, 0);
  EXPECT_FALSE(dec.head);
  EXPECT_EQ(dec.dtype, DType::BF16);
}

TEST(SpecValid, KdaOptionalsAndSpellings) {
  Spec spec = parseValid(replaced(kKda, "  gate: unbounded\n",
                                  "  gate: bounded\n"
                                  "  lower_bound: -5\n" // closed at -5
                                  "  chunk_size: 16\n"
                                  "  qk_l2norm: no\n"
                                  "  initial_state: yes\n"
                                  "  scale: 8.838834764831845e-2\n"
                                  "  dtype: f32\n"));
  const auto &kda = std::get<KdaPrefillSpec>(spec.family);
  EXPECT_EQ(kda.gate, KdaGate::Bounded);
  EXPECT_DOUBLE_EQ(kda.lowerBound.value_or(0), -5.0);
  EXPECT_EQ(kda.chunkSize, 16);
  EXPECT_FALSE(kda.qkL2Norm);
  EXPECT_TRUE(kda.initialState);
  EXPECT_DOUBLE_EQ(kda.scale.value_or(0), 0.08838834764831845);
  EXPECT_EQ(kda.dtype, DType::F32);
}

TEST(SpecValid, FloatsTakeIntegersAndIntsTakeSigns) {
  Spec spec =
      parseValid(replaced(kMla, "  sm_scale: 0.1\n",
                          "  sm_scale: 1\n  head_dim_kpe: +8\n  dtype: f16\n"));
  const auto &mla = std::get<MlaDecodeSpec>(spec.family);
  EXPECT_DOUBLE_EQ(mla.smScale, 1.0);
  EXPECT_EQ(mla.headDimKpe, 8);
  EXPECT_EQ(mla.dtype, DType::F16);
}

TEST(SpecValid, QuotedNameAndFlowSection) {
  Spec spec = parseValid("name: \"flow_spec\"\n"
                         "decoder: {layers: 1, hidden: 64, num_q_heads: 2, "
                         "num_kv_heads: 2, head_dim: 32, ffn: 128, "
                         "max_batch: 1, max_pages: 1, vocab: 1000, "
                         "head: true}\n");
  EXPECT_EQ(spec.name, "flow_spec");
  const auto &dec = std::get<DecoderSpec>(spec.family);
  EXPECT_TRUE(dec.head);
  EXPECT_EQ(dec.vocab, 1000);
}

TEST(SpecValid, Names) {
  EXPECT_STREQ(dtypeName(DType::BF16), "bf16");
  EXPECT_STREQ(dtypeName(DType::F16), "f16");
  EXPECT_STREQ(dtypeName(DType::F32), "f32");
}

//===----------------------------------------------------------------------===//
// Diagnostics: format and document-level problems
//===----------------------------------------------------------------------===//

// Shapes the bodies cannot run (kernels/common/BodyLimits.h) are the
// spec's error, at the value, not an abort or a stack overflow at run time.
TEST(SpecDiagnostics, MlaShapesPastTheBodiesLimits) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: 512")),
            Errors({"3:14: 'num_heads' must be in [1, 256], got 512"}));
  EXPECT_EQ(errorsIn(kMla + "  head_dim_ckv: 2048\n"),
            Errors({"8:17: 'head_dim_ckv' must be a multiple of 16 in "
                    "[16, 1024], got 2048"}));
  EXPECT_EQ(errorsIn(kMla + "  head_dim_kpe: 512\n"),
            Errors({"8:17: 'head_dim_kpe' must be a multiple of 8 in "
                    "[8, 256], got 512"}));
  EXPECT_TRUE(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: 256") +
                       "  head_dim_ckv: 1024\n  head_dim_kpe: 256\n")
                  .empty());
}

// Spec numbers become 32-bit float attributes: one that would round to
// infinity or to zero there is out of range, not silently changed.
TEST(SpecRanges, FloatsFitAThirtyTwoBitFloat) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: 1e308")),
            Errors({"5:13: 'sm_scale' must be within a 32-bit float's range, "
                    "got 1e308"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: 1e-50")),
            Errors({"5:13: 'sm_scale' must be within a 32-bit float's range, "
                    "got 1e-50"}));
  EXPECT_TRUE(
      errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: 3e38")).empty());
}

// A mangled file gets the first 50 errors in file order and a count.
TEST(SpecDiagnostics, ManyErrorsAreCapped) {
  std::string text = kMla;
  for (int i = 0; i < 120; ++i)
    text += "  k" + std::to_string(i) + ": 1\n";
  std::vector<std::string> errors = errorsIn(text);
  ASSERT_EQ(errors.size(), 51u);
  EXPECT_EQ(errors[0], "8:3: unknown key 'k0' in 'mla_decode'");
  EXPECT_EQ(errors[49], "57:3: unknown key 'k49' in 'mla_decode'");
  EXPECT_EQ(errors[50], "58:3: too many errors: 120 in all, the first 50 "
                        "shown");
}

// Inputs yaml-cpp 0.7 never returns from that no pre-scan catches (spec
// fuzzer finds after the last pre-scan): the loader's probe parse in a
// child process gives up at the time bound or at its memory cap, whichever
// the machine reaches first, and says so at 1:1.
TEST(SpecDiagnostics, ParserThatNeverReturnsIsReported) {
  const char *old = std::getenv("LOOM_SPEC_PARSE_TIMEOUT_MS");
  const std::string saved = old ? old : "";
  setenv("LOOM_SPEC_PARSE_TIMEOUT_MS", "300", 1);
  const std::string tail = ": yaml-cpp 0.7 loops on some malformed YAML; "
                           "check the anchors ('&'), quotes and commas";
  const Errors either = {
      "1:1: the YAML parser did not finish within 300 ms "
      "(LOOM_SPEC_PARSE_TIMEOUT_MS)" + tail,
      "1:1: the YAML parser ran out of memory (1 GiB)" + tail};
  for (const char *text : {"&'',\xff", "''&indtr..#,"}) {
    Errors errors = errorsIn(text);
    ASSERT_EQ(errors.size(), 1u) << text;
    EXPECT_TRUE(errors[0] == either[0] || errors[0] == either[1]) << errors[0];
  }
  // Well-formed specs still parse with the probe, and without it.
  parseValid(kMla);
  setenv("LOOM_SPEC_PARSE_TIMEOUT_MS", "0", 1);
  parseValid(kMla);
  if (old)
    setenv("LOOM_SPEC_PARSE_TIMEOUT_MS", saved.c_str(), 1);
  else
    unsetenv("LOOM_SPEC_PARSE_TIMEOUT_MS");
}

// yaml-cpp 0.7 never returns from some streams with a line that starts
// with ',' outside a flow collection (the spec fuzzer's finds,
// tests/fuzz/spec-corpus): the loader refuses them first, at the comma.
TEST(SpecDiagnostics, LineOpeningWithCommaIsRefused) {
  const std::string why =
      "a ',' outside a flow collection ([...] or {...}) starts a line or "
      "follows a complete node";
  EXPECT_EQ(errorsIn("\n, h"), Errors({"2:1: " + why}));
  EXPECT_EQ(errorsIn("- a\n, b"), Errors({"2:1: " + why}));
  EXPECT_EQ(errorsIn("--- ,x"), Errors({"1:5: " + why}));
  EXPECT_EQ(errorsIn("x: don't\n# c\n  , y"), Errors({"3:3: " + why}));
  EXPECT_EQ(errorsIn("{\n  \"a\": 1\n },\n \"b\": 2\n}"),
            Errors({"3:3: " + why}));
  EXPECT_EQ(errorsIn("'x', y"), Errors({"1:4: " + why}));
  // Control characters (yaml-cpp loops on some of those too).
  EXPECT_EQ(errorsIn(std::string("name: t\0,,", 10)),
            Errors({"1:8: a spec is text: control character 0x00 is not "
                    "allowed"}));
  // A plain scalar may hold commas.
  EXPECT_TRUE(parseSpec(replaced(kMla, "name: t",
                                 "name: t\ndescription: a, b, c"),
                        "t.yaml")
                  .ok());
  // Inside a flow collection, a quoted scalar or a block scalar it is text.
  EXPECT_TRUE(parseSpec(replaced(kMla, "name: t",
                                 "name: t\ndescription: |\n  , a"),
                        "t.yaml")
                  .ok());
  EXPECT_TRUE(parseSpec(replaced(kMla, "name: t",
                                 "name: t\ndescription: 'a\n  , b'"),
                        "t.yaml")
                  .ok());
  EXPECT_TRUE(parseSpec(replaced(kMla, "name: t",
                                 "name: t\ntargets: [h200\n  , h100]"),
                        "t.yaml")
                  .ok());
}

TEST(SpecDiagnostics, StrFormat) {
  Diagnostic d{"a/b.yaml", 3, 7, "boom"};
  EXPECT_EQ(d.str(), "a/b.yaml:3:7: error: boom");

  LoadResult result =
      parseSpec(replaced(kMla, "  page_size: 64", "  page_size: 3"), "x.yaml");
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].str(),
            "x.yaml:4:14: error: 'page_size' must be a power of two in "
            "[1, 1024], got 3");
}

TEST(SpecDiagnostics, YamlSyntaxError) {
  // The mapping key at deeper indentation is the parser's complaint, at the
  // colon that makes it a key.
  EXPECT_EQ(errorsIn("name: t\n"
                     " mla_decode: 1\n"),
            Errors({"2:12: invalid YAML: illegal map value"}));
  // An unclosed flow mapping is noticed at the end of the input.
  EXPECT_EQ(errorsIn("name: t\n"
                     "mla_decode: {num_heads: 16\n"),
            Errors({"3:1: invalid YAML: end of map flow not found"}));
}

TEST(SpecDiagnostics, EmptyDocument) {
  const std::string message = "1:1: empty spec: expected a mapping with "
                              "'name' and one of 'mla_decode', "
                              "'kda_prefill', 'decoder'";
  EXPECT_EQ(errorsIn(""), Errors({message}));
  EXPECT_EQ(errorsIn("# only a comment\n\n"), Errors({message}));
  EXPECT_EQ(errorsIn("~\n"), Errors({message}));
}

TEST(SpecDiagnostics, TopLevelNotAMapping) {
  EXPECT_EQ(errorsIn("- name: t\n"),
            Errors({"1:1: a spec must be a mapping at the top level, got a "
                    "sequence"}));
  EXPECT_EQ(errorsIn("just text\n"),
            Errors({"1:1: a spec must be a mapping at the top level, got "
                    "'just text'"}));
}

TEST(SpecDiagnostics, SeveralDocuments) {
  EXPECT_EQ(errorsIn(kMla + "---\nname: u\n"),
            Errors({"9:1: a spec file must hold a single YAML document, "
                    "found 2"}));
}

TEST(SpecDiagnostics, MissingFile) {
  const std::string path = kSourceDir + "/configs/no_such_spec.yaml";
  LoadResult result = loadSpecFile(path);
  EXPECT_FALSE(result.spec.has_value());
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].file, path);
  EXPECT_EQ(result.errors[0].line, 1);
  EXPECT_EQ(result.errors[0].column, 1);
  EXPECT_EQ(result.errors[0].str(),
            path + ":1:1: error: cannot open file: No such file or directory");
}

TEST(SpecDiagnostics, DirectoryIsNotASpec) {
  LoadResult result = loadSpecFile(kSourceDir + "/configs");
  EXPECT_FALSE(result.ok());
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].message, "cannot read file: Is a directory");
}

TEST(SpecDiagnostics, FileErrorsNameTheFile) {
  // loadSpecFile reports positions inside the file under the file's path.
  const std::string path = kSourceDir + "/configs/decoder/llama3_8b.yaml";
  LoadResult good = loadSpecFile(path);
  EXPECT_TRUE(good.ok());
  LoadResult bad = parseSpec("name: t\n", path);
  ASSERT_FALSE(bad.errors.empty());
  EXPECT_EQ(bad.errors[0].file, path);
}

//===----------------------------------------------------------------------===//
// Top-level keys
//===----------------------------------------------------------------------===//

TEST(SpecTopLevel, UnknownKey) {
  EXPECT_EQ(errorsIn(kMla + "flavor: spicy\n"),
            Errors({"8:1: unknown top-level key 'flavor'"}));
  EXPECT_EQ(errorsIn(kMla + "descripton: typo\n"),
            Errors({"8:1: unknown top-level key 'descripton'; did you mean "
                    "'description'?"}));
}

TEST(SpecTopLevel, MissingName) {
  EXPECT_EQ(errorsIn(replaced(kMla, "name: t\n", "")),
            Errors({"1:1: missing required key 'name'"}));
}

TEST(SpecTopLevel, NameNotAnIdentifier) {
  EXPECT_EQ(errorsIn(replaced(kMla, "name: t", "name: my-kernel")),
            Errors({"1:7: 'name' must be a C identifier "
                    "([A-Za-z_][A-Za-z0-9_]*), got 'my-kernel'"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "name: t", "name: 3d")),
            Errors({"1:7: 'name' must be a C identifier "
                    "([A-Za-z_][A-Za-z0-9_]*), got '3d'"}));
}

TEST(SpecTopLevel, WrongTypeString) {
  EXPECT_EQ(errorsIn(replaced(kMla, "name: t", "name: [a, b]")),
            Errors({"1:7: 'name' must be a string, got a sequence"}));
  EXPECT_EQ(errorsIn(kMla + "description: {a: 1}\n"),
            Errors({"8:14: 'description' must be a string, got a mapping"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "name: t", "name:")),
            Errors({"1:1: 'name' must be a string, got an empty value"}));
}

TEST(SpecTopLevel, WrongTypeSequence) {
  EXPECT_EQ(errorsIn(kMla + "targets: h100\n"),
            Errors({"8:10: 'targets' must be a sequence, got 'h100'"}));
}

TEST(SpecTopLevel, UnknownTarget) {
  EXPECT_EQ(
      errorsIn(kMla + "targets: [h100, h300]\n"),
      Errors({"8:17: unknown target 'h300'; known targets: " + kAllChips}));
  // Block style: the position is the entry's, after the dash.
  EXPECT_EQ(
      errorsIn(kMla + "targets:\n  - h200\n  - gfx942\n"),
      Errors({"10:5: unknown target 'gfx942'; known targets: " + kAllChips}));
}

TEST(SpecTopLevel, DuplicateTarget) {
  EXPECT_EQ(errorsIn(kMla + "targets: [h200, b200, h200]\n"),
            Errors({"8:23: duplicate target 'h200'"}));
}

TEST(SpecTopLevel, TargetNotAName) {
  EXPECT_EQ(errorsIn(kMla + "targets: [h100, [b200]]\n"),
            Errors({"8:17: each entry of 'targets' must be a chip name, got "
                    "a sequence"}));
}

TEST(SpecTopLevel, EmptyTargetsMeansAny) {
  Spec spec = parseValid(kMla + "targets: []\n");
  EXPECT_TRUE(spec.targets.empty());
}

TEST(SpecTopLevel, DuplicateKey) {
  EXPECT_EQ(errorsIn(kMla + "name: u\n"),
            Errors({"8:1: duplicate key 'name'"}));
  EXPECT_EQ(errorsIn(kMla + "  num_heads: 32\n"),
            Errors({"8:3: duplicate key 'num_heads' in 'mla_decode'"}));
}

TEST(SpecTopLevel, KeyNotAName) {
  EXPECT_EQ(errorsIn(kMla + "? [a, b]\n: 1\n"),
            Errors({"8:3: keys must be names, got a sequence"}));
}

TEST(SpecTopLevel, NoFamily) {
  EXPECT_EQ(errorsIn("name: t\ndescription: nothing to build\n"),
            Errors({"1:1: a spec needs exactly one of 'mla_decode', "
                    "'kda_prefill', 'decoder', found none"}));
}

TEST(SpecTopLevel, MisspeltFamily) {
  EXPECT_EQ(errorsIn(replaced(kMla, "mla_decode:", "mla_decod:")),
            Errors({"1:1: a spec needs exactly one of 'mla_decode', "
                    "'kda_prefill', 'decoder', found none",
                    "2:1: unknown top-level key 'mla_decod'; did you mean "
                    "'mla_decode'?"}));
}

TEST(SpecTopLevel, TwoFamilies) {
  // kKda without its name line: lines 8.. hold a complete kda_prefill section.
  EXPECT_EQ(errorsIn(kMla + replaced(kKda, "name: t\n", "")),
            Errors({"8:1: a spec needs exactly one of 'mla_decode', "
                    "'kda_prefill', 'decoder'; found 'kda_prefill' after "
                    "'mla_decode'"}));
  // Both sections are still checked.
  EXPECT_EQ(errorsIn(kMla + "decoder:\n  layers: 0\n"),
            Errors({"8:1: a spec needs exactly one of 'mla_decode', "
                    "'kda_prefill', 'decoder'; found 'decoder' after "
                    "'mla_decode'",
                    "9:3: missing required key 'hidden' in 'decoder'",
                    "9:3: missing required key 'num_q_heads' in 'decoder'",
                    "9:3: missing required key 'num_kv_heads' in 'decoder'",
                    "9:3: missing required key 'head_dim' in 'decoder'",
                    "9:3: missing required key 'ffn' in 'decoder'",
                    "9:3: missing required key 'max_batch' in 'decoder'",
                    "9:3: missing required key 'max_pages' in 'decoder'",
                    "9:11: 'layers' must be in [1, 1024], got 0"}));
}

TEST(SpecTopLevel, FamilyNotAMapping) {
  EXPECT_EQ(errorsIn("name: t\nmla_decode: 5\n"),
            Errors({"2:13: 'mla_decode' must be a mapping, got '5'"}));
  EXPECT_EQ(errorsIn("name: t\ndecoder:\n"),
            Errors({"2:1: 'decoder' must be a mapping, got an empty value"}));
}

//===----------------------------------------------------------------------===//
// Family keys: unknown, missing, wrong type
//===----------------------------------------------------------------------===//

TEST(SpecFamilyKeys, UnknownKeyWithSuggestion) {
  // A misspelt required key is both missing and unknown.
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_head: 16")),
            Errors({"3:3: missing required key 'num_heads' in 'mla_decode'",
                    "3:3: unknown key 'num_head' in 'mla_decode'; did you "
                    "mean 'num_heads'?"}));
  // camelCase is two edits from snake_case.
  EXPECT_EQ(errorsIn(kDecoder + "  ropeTheta: 1e6\n"),
            Errors({"11:3: unknown key 'ropeTheta' in 'decoder'; did you "
                    "mean 'rope_theta'?"}));
}

TEST(SpecFamilyKeys, UnknownKeyWithoutSuggestion) {
  EXPECT_EQ(errorsIn(kMla + "  tile_m: 64\n"),
            Errors({"8:3: unknown key 'tile_m' in 'mla_decode'"}));
  EXPECT_EQ(errorsIn(kKda + "  x: 1\n"),
            Errors({"7:3: unknown key 'x' in 'kda_prefill'"}));
}

TEST(SpecFamilyKeys, MissingRequired) {
  std::string text = replaced(kMla, "  page_size: 64\n", "");
  text = replaced(text, "  max_batch: 8\n", "");
  EXPECT_EQ(errorsIn(text),
            Errors({"3:3: missing required key 'page_size' in 'mla_decode'",
                    "3:3: missing required key 'max_batch' in 'mla_decode'"}));
  EXPECT_EQ(errorsIn(replaced(kKda, "  gate: unbounded\n", "")),
            Errors({"3:3: missing required key 'gate' in 'kda_prefill'"}));
}

TEST(SpecFamilyKeys, WrongTypeInteger) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  page_size: 64", "  page_size: abc")),
            Errors({"4:14: 'page_size' must be an integer, got 'abc'"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: 16.5")),
            Errors({"3:14: 'num_heads' must be an integer, got '16.5'"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: 1e2")),
            Errors({"3:14: 'num_heads' must be an integer, got '1e2'"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: 0x10")),
            Errors({"3:14: 'num_heads' must be an integer, got '0x10'"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: \"16\"")),
            Errors({"3:14: 'num_heads' must be an integer, got the quoted "
                    "string \"16\""}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  max_batch: 8", "  max_batch: [8]")),
            Errors({"6:14: 'max_batch' must be an integer, got a sequence"}));
  // An empty value is reported at its key: yaml-cpp would place it on the
  // next line.
  EXPECT_EQ(errorsIn(replaced(kMla, "  page_size: 64", "  page_size:")),
            Errors({"4:3: 'page_size' must be an integer, got an empty "
                    "value"}));
}

TEST(SpecFamilyKeys, WrongTypeFloat) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: fast")),
            Errors({"5:13: 'sm_scale' must be a number, got 'fast'"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: .inf")),
            Errors({"5:13: 'sm_scale' must be a number, got '.inf'"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: 1e999")),
            Errors({"5:13: 'sm_scale' must be a number, got '1e999'"}));
  EXPECT_EQ(errorsIn(kDecoder + "  rms_eps: {eps: 1}\n"),
            Errors({"11:12: 'rms_eps' must be a number, got a mapping"}));
}

TEST(SpecFamilyKeys, WrongTypeBool) {
  EXPECT_EQ(errorsIn(kKda + "  qk_l2norm: maybe\n"),
            Errors({"7:14: 'qk_l2norm' must be true or false, got 'maybe'"}));
  EXPECT_EQ(errorsIn(kDecoder + "  head: 1\n"),
            Errors({"11:9: 'head' must be true or false, got '1'"}));
}

TEST(SpecFamilyKeys, WrongEnumValue) {
  EXPECT_EQ(errorsIn(kMla + "  dtype: fp8\n"),
            Errors({"8:10: 'dtype' must be bf16, f16 or f32, got 'fp8'"}));
  EXPECT_EQ(errorsIn(replaced(kKda, "  gate: unbounded", "  gate: sigmoid")),
            Errors({"4:9: 'gate' must be unbounded or bounded, got "
                    "'sigmoid'"}));
  EXPECT_EQ(errorsIn(replaced(kKda, "  gate: unbounded", "  gate: [a]")),
            Errors({"4:9: 'gate' must be a string, got a sequence"}));
}

//===----------------------------------------------------------------------===//
// Family keys: ranges
//===----------------------------------------------------------------------===//

TEST(SpecRanges, PlainRange) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: 0")),
            Errors({"3:14: 'num_heads' must be in [1, 256], got 0"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: -3")),
            Errors({"3:14: 'num_heads' must be in [1, 256], got -3"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  num_heads: 16", "  num_heads: 257")),
            Errors({"3:14: 'num_heads' must be in [1, 256], got 257"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  max_batch: 8", "  max_batch: 65537")),
            Errors({"6:14: 'max_batch' must be in [1, 65536], got 65537"}));
  EXPECT_EQ(errorsIn(replaced(kKda, "  max_tokens: 1024",
                              "  max_tokens: 2147483648")),
            Errors({"5:15: 'max_tokens' must be in [1, 2147483647], got "
                    "2147483648"}));
}

TEST(SpecRanges, IntegerOverflowIsOutOfRange) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  max_pages: 64",
                              "  max_pages: 99999999999999999999")),
            Errors({"7:14: 'max_pages' must be in [1, 2147483647], got "
                    "99999999999999999999"}));
}

TEST(SpecRanges, Multiples) {
  EXPECT_EQ(errorsIn(kMla + "  head_dim_ckv: 520\n"),
            Errors({"8:17: 'head_dim_ckv' must be a multiple of 16 in "
                    "[16, 1024], got 520"}));
  EXPECT_EQ(errorsIn(kMla + "  head_dim_kpe: 0\n"),
            Errors({"8:17: 'head_dim_kpe' must be a multiple of 8 in "
                    "[8, 256], got 0"}));
  EXPECT_EQ(errorsIn(kKda + "  head_dim_v: 1024\n"),
            Errors({"7:15: 'head_dim_v' must be a multiple of 16 in "
                    "[16, 512], got 1024"}));
  EXPECT_EQ(errorsIn(replaced(kDecoder, "  hidden: 256", "  hidden: 250")),
            Errors({"4:11: 'hidden' must be a multiple of 16 in [16, 65536], "
                    "got 250"}));
  EXPECT_EQ(errorsIn(replaced(kDecoder, "  head_dim: 64", "  head_dim: 65")),
            Errors({"7:13: 'head_dim' must be even and in [16, 512], got "
                    "65"}));
}

TEST(SpecRanges, PowerOfTwo) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  page_size: 64", "  page_size: 3")),
            Errors({"4:14: 'page_size' must be a power of two in [1, 1024], "
                    "got 3"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  page_size: 64", "  page_size: 2048")),
            Errors({"4:14: 'page_size' must be a power of two in [1, 1024], "
                    "got 2048"}));
  EXPECT_EQ(errorsIn(kDecoder + "  page_size: 24\n"),
            Errors({"11:14: 'page_size' must be a power of two in [1, 1024], "
                    "got 24"}));
}

TEST(SpecRanges, PositiveFloats) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: 0")),
            Errors({"5:13: 'sm_scale' must be > 0, got 0"}));
  EXPECT_EQ(errorsIn(replaced(kMla, "  sm_scale: 0.1", "  sm_scale: -0.1")),
            Errors({"5:13: 'sm_scale' must be > 0, got -0.1"}));
  EXPECT_EQ(errorsIn(kDecoder + "  rms_eps: -1e-6\n"),
            Errors({"11:12: 'rms_eps' must be > 0, got -1e-6"}));
  EXPECT_EQ(errorsIn(kKda + "  scale: 0.0\n"),
            Errors({"7:10: 'scale' must be > 0, got 0.0"}));
}

TEST(SpecRanges, ChunkSize) {
  EXPECT_EQ(errorsIn(kKda + "  chunk_size: 32\n"),
            Errors({"7:15: 'chunk_size' must be 16 or 64, got 32"}));
}

//===----------------------------------------------------------------------===//
// Cross-field checks
//===----------------------------------------------------------------------===//

TEST(SpecCrossField, QueryHeadsMultipleOfKvHeads) {
  EXPECT_EQ(
      errorsIn(replaced(kDecoder, "  num_kv_heads: 2", "  num_kv_heads: 3")),
      Errors({"6:17: 'num_q_heads' (4) must be a multiple of "
              "'num_kv_heads' (3)"}));
}

TEST(SpecCrossField, MaxSeqsWithinMaxTokens) {
  EXPECT_EQ(errorsIn(replaced(kKda, "  max_seqs: 8", "  max_seqs: 2048")),
            Errors({"6:13: 'max_seqs' (2048) must not exceed 'max_tokens' "
                    "(1024)"}));
}

TEST(SpecCrossField, MaxPagesCoverMaxBatch) {
  EXPECT_EQ(errorsIn(replaced(kMla, "  max_pages: 64", "  max_pages: 4")),
            Errors({"7:14: 'max_pages' (4) must be at least 'max_batch' "
                    "(8)"}));
  EXPECT_EQ(errorsIn(replaced(kDecoder, "  max_pages: 64", "  max_pages: 2")),
            Errors({"10:14: 'max_pages' (2) must be at least 'max_batch' "
                    "(4)"}));
}

TEST(SpecCrossField, CheckSkippedWhenAFieldIsBad) {
  // One bad value, one message: no follow-on complaint from the cross-check.
  EXPECT_EQ(
      errorsIn(replaced(kDecoder, "  num_kv_heads: 2", "  num_kv_heads: 0")),
      Errors({"6:17: 'num_kv_heads' must be in [1, 1024], got 0"}));
}

TEST(SpecCrossField, BoundedGateNeedsLowerBound) {
  EXPECT_EQ(errorsIn(replaced(kKda, "  gate: unbounded", "  gate: bounded")),
            Errors({"4:9: 'gate: bounded' requires 'lower_bound' in [-5, 0)"}));
}

TEST(SpecCrossField, LowerBoundNeedsBoundedGate) {
  EXPECT_EQ(errorsIn(kKda + "  lower_bound: -1.0\n"),
            Errors({"7:3: 'lower_bound' requires 'gate: bounded'"}));
}

TEST(SpecCrossField, LowerBoundRange) {
  std::string bounded = replaced(kKda, "  gate: unbounded", "  gate: bounded");
  EXPECT_EQ(errorsIn(bounded + "  lower_bound: 0.0\n"),
            Errors({"7:16: 'lower_bound' must be in [-5, 0), got 0.0"}));
  EXPECT_EQ(errorsIn(bounded + "  lower_bound: -5.5\n"),
            Errors({"7:16: 'lower_bound' must be in [-5, 0), got -5.5"}));
  Spec spec = parseValid(bounded + "  lower_bound: -0.5\n");
  EXPECT_DOUBLE_EQ(std::get<KdaPrefillSpec>(spec.family).lowerBound.value_or(0),
                   -0.5);
}

TEST(SpecCrossField, HeadNeedsVocab) {
  EXPECT_EQ(errorsIn(kDecoder + "  head: true\n"),
            Errors({"11:9: 'head: true' requires 'vocab'"}));
  Spec spec = parseValid(kDecoder + "  head: true\n  vocab: 32000\n");
  EXPECT_EQ(std::get<DecoderSpec>(spec.family).vocab, 32000);
}

//===----------------------------------------------------------------------===//
// Many errors in one file
//===----------------------------------------------------------------------===//

TEST(SpecManyErrors, AllReportedInFileOrder) {
  const std::string text = "name: bad-name\n"                // 1
                           "description: several problems\n" // 2
                           "targets: [h200, h300]\n"         // 3
                           "decoder:\n"                      // 4
                           "  hidden: 250\n"                 // 5
                           "  num_q_heads: 32\n"             // 6
                           "  num_kv_heads: 6\n"             // 7
                           "  head_dim: 128\n"               // 8
                           "  ffn: lots\n"                   // 9
                           "  rms_eps: 1e-5\n"               // 10
                           "  max_batch: 4\n"                // 11
                           "  max_pages: 64\n"               // 12
                           "  rope_theat: 10000\n"           // 13
                           "extra: 1\n";                     // 14
  EXPECT_EQ(
      errorsIn(text),
      Errors({"1:7: 'name' must be a C identifier ([A-Za-z_][A-Za-z0-9_]*), "
              "got 'bad-name'",
              "3:17: unknown target 'h300'; known targets: " + kAllChips,
              "5:3: missing required key 'layers' in 'decoder'",
              "5:11: 'hidden' must be a multiple of 16 in [16, 65536], got 250",
              "7:17: 'num_q_heads' (32) must be a multiple of 'num_kv_heads' "
              "(6)",
              "9:8: 'ffn' must be an integer, got 'lots'",
              "13:3: unknown key 'rope_theat' in 'decoder'; did you mean "
              "'rope_theta'?",
              "14:1: unknown top-level key 'extra'"}));
}

TEST(SpecManyErrors, UnknownKeyAndMissingField) {
  EXPECT_EQ(errorsIn(replaced(kKda, "  max_seqs: 8", "  max_sequences: 8")),
            Errors({"3:3: missing required key 'max_seqs' in 'kda_prefill'",
                    "6:3: unknown key 'max_sequences' in 'kda_prefill'"}));
}

} // namespace
