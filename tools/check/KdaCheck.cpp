//===- KdaCheck.cpp - kda_prefill inputs and checks -----------------------===//
//
// Buffers (BuildGraph.cpp buildKdaPrefill): q, k, g [T,H,K], v [T,H,V],
// beta [T,H] inputs; a_log [H], dt_bias [H,K] (f32 weights); cu_seqlens
// [N+1] (i32 meta); initial_state [N,H,K,V] (f32, only with
// initial_state: true); o [T,H,V] and final_state [N,H,K,V] (f32) outputs.
//
// Inputs, fresh every launch: q, k, v ~ N(0, 1); g_raw ~ N(0, 1); initial
// state ~ N(0, 1); per head, by h % 4, one of four regimes (DESIGN.md's
// stress list: g near 0 and strongly negative, beta near 0 and 1):
//   0: realistic Kimi-Linear / Mamba-style init: A = e^a_log in [1, 16],
//      dt_bias ~ U(-5, -2), beta_raw ~ N(0, 1.5) (beta ~0.01 .. ~0.99);
//   1: as 0 but beta_raw ~ N(0, 4): beta saturates near 0 and 1;
//   2: slow decay, g near 0: a_log ~ U(-3, -2), dt_bias ~ U(-6, -4);
//   3: strong decay: A in [1, 16], dt_bias ~ U(0, 2) (unbounded: g down to
//      about -35 per token; bounded: g near lower_bound).
//
// Checks (DESIGN.md "KDA"): relative RMS error ||d|| / ||ref|| <= 5e-3 on o
// and on final_state; on o also per 512-token window of the packed tokens
// and per sequence (so a short sequence cannot hide among long ones); on
// final_state also per sequence.
//
//===----------------------------------------------------------------------===//
#include "tools/check/CheckInternal.h"
#include "tools/check/ParallelDraw.h"

#include "tools/oracle/KdaOracle.h"

#include <cmath>
#include <sstream>

namespace loom::check::detail {
namespace {

constexpr double kRelRms = 5e-3;
constexpr int64_t kWindow = 512;

class KdaFamily : public Family {
public:
  KdaFamily(Session &s, const loom::spec::Spec &spec,
            const loom::spec::KdaPrefillSpec &k, const RunOptions &options)
      : s_(s), k_(k), act_(elemOf(k.dtype)) {
    const int64_t H = k.numHeads, K = k.headDimK, V = k.headDimV;
    std::vector<ExpectedBuffer> expected = {
        {"q", LOOM_ROLE_INPUT, act_, {-1, H, K}},
        {"k", LOOM_ROLE_INPUT, act_, {-1, H, K}},
        {"v", LOOM_ROLE_INPUT, act_, {-1, H, V}},
        {"g", LOOM_ROLE_INPUT, act_, {-1, H, K}},
        {"beta", LOOM_ROLE_INPUT, act_, {-1, H}},
        {"a_log", LOOM_ROLE_WEIGHT, LOOM_ELEM_F32, {H}},
        {"dt_bias", LOOM_ROLE_WEIGHT, LOOM_ELEM_F32, {H, K}},
        {"cu_seqlens", LOOM_ROLE_META, LOOM_ELEM_I32, {-1}}};
    if (k.initialState)
      expected.push_back(
          {"initial_state", LOOM_ROLE_INPUT, LOOM_ELEM_F32, {-1, H, K, V}});
    expected.push_back({"o", LOOM_ROLE_OUTPUT, act_, {-1, H, V}});
    expected.push_back(
        {"final_state", LOOM_ROLE_OUTPUT, LOOM_ELEM_F32, {-1, H, K, V}});
    s.expectBuffers(expected, "kda_prefill spec '" + spec.name + "'");

    lens_ = options.seqLens;
    if (lens_.empty()) {
      for (int64_t len : {1, 63, 64, 65, 200}) {
        if (int64_t(lens_.size()) >= k.maxSeqs || T_ + len > k.maxTokens)
          break;
        lens_.push_back(len);
        T_ += len;
      }
    } else {
      for (int64_t len : lens_) {
        if (len < 0)
          fail("kda_prefill: negative sequence length " + std::to_string(len));
        T_ += len;
      }
    }
    N_ = int64_t(lens_.size());
    if (N_ < 1)
      fail("kda_prefill: --seq-lens needs at least one sequence");
    if (N_ > k.maxSeqs)
      fail("kda_prefill: " + std::to_string(N_) +
           " sequences exceed max_seqs " + std::to_string(k.maxSeqs));
    if (T_ > k.maxTokens)
      fail("kda_prefill: " + std::to_string(T_) +
           " tokens exceed max_tokens " + std::to_string(k.maxTokens));
    std::vector<std::pair<const char *, int64_t>> needs = {
        {"q", T_}, {"cu_seqlens", N_ + 1}, {"final_state", N_}};
    if (k.initialState)
      needs.push_back({"initial_state", N_});
    for (auto [name, need] : needs)
      if (need > s.bound(name))
        fail(std::string("kda_prefill: buffer '") + name + "' needs " +
             std::to_string(need) + " entries, the program's bound is " +
             std::to_string(s.bound(name)));

    size_t es = elemSize(act_);
    s.allocate("q", size_t(T_ * H * K) * es);
    s.allocate("k", size_t(T_ * H * K) * es);
    s.allocate("v", size_t(T_ * H * V) * es);
    s.allocate("g", size_t(T_ * H * K) * es);
    s.allocate("beta", size_t(T_ * H) * es);
    s.allocate("a_log", size_t(H) * 4);
    s.allocate("dt_bias", size_t(H * K) * 4);
    s.allocate("cu_seqlens", size_t(N_ + 1) * 4);
    if (k.initialState)
      s.allocate("initial_state", size_t(N_ * H * K * V) * 4);
    s.allocate("o", size_t(T_ * H * V) * es);
    s.allocate("final_state", size_t(N_ * H * K * V) * 4);
  }

  std::string sizes() const override {
    std::ostringstream os;
    os << N_ << " sequences (" << joinInts(lens_) << "), " << T_ << " tokens, "
       << (k_.gate == loom::spec::KdaGate::Bounded ? "bounded" : "unbounded")
       << " gate, chunk " << k_.chunkSize
       << (k_.initialState ? ", initial state" : ", zero initial state");
    return os.str();
  }

  void prepare(Rng &rng, int) override {
    const int64_t H = k_.numHeads, K = k_.headDimK, V = k_.headDimV;
    q_ = HostTensor(act_, {T_, H, K});
    kk_ = HostTensor(act_, {T_, H, K});
    v_ = HostTensor(act_, {T_, H, V});
    g_ = HostTensor(act_, {T_, H, K});
    beta_ = HostTensor(act_, {T_, H});
    aLog_ = HostTensor(LOOM_ELEM_F32, {H});
    dtBias_ = HostTensor(LOOM_ELEM_F32, {H, K});
    // On all cores (ParallelDraw.h): T = 32768 with 32 heads is 4 x 134M
    // draws.
    auto normal = [](Rng &gen, int64_t) { return gen.normal(); };
    fillNonZeroParallel(q_, rng, normal);
    fillNonZeroParallel(kk_, rng, normal);
    fillNonZeroParallel(v_, rng, normal);
    fillNonZeroParallel(g_, rng, normal);
    // Gate and beta regimes by head (h % 4), see the top of the file.
    fillNonZeroParallel(beta_, rng, [H](Rng &gen, int64_t i) {
      return gen.normal(0, i % H % 4 == 1 ? 4.0 : 1.5);
    });
    for (int64_t h = 0; h < H; ++h) {
      int regime = int(h % 4);
      aLog_.set(h, regime == 2 ? rng.uniform(-3.0, -2.0)
                               : rng.uniform(0.01, std::log(16.0)));
      for (int64_t c = 0; c < K; ++c) {
        double lo = regime == 2 ? -6.0 : regime == 3 ? 0.0 : -5.0;
        double hi = regime == 2 ? -4.0 : regime == 3 ? 2.0 : -2.0;
        dtBias_.set(h * K + c, rng.uniform(lo, hi));
      }
    }

    cu_ = std::vector<int32_t>(size_t(N_ + 1), 0);
    for (int64_t n = 0; n < N_; ++n)
      cu_[size_t(n + 1)] = cu_[size_t(n)] + int32_t(lens_[size_t(n)]);
    HostTensor cu(LOOM_ELEM_I32, {N_ + 1});
    for (int64_t n = 0; n <= N_; ++n)
      cu.set(n, cu_[size_t(n)]);

    s_.upload("q", q_);
    s_.upload("k", kk_);
    s_.upload("v", v_);
    s_.upload("g", g_);
    s_.upload("beta", beta_);
    s_.upload("a_log", aLog_);
    s_.upload("dt_bias", dtBias_);
    s_.upload("cu_seqlens", cu);
    if (k_.initialState) {
      init_ = HostTensor(LOOM_ELEM_F32, {N_, H, K, V});
      fillNonZeroParallel(init_, rng,
                          [](Rng &gen, int64_t) { return gen.normal(); });
      s_.upload("initial_state", init_);
      s_.expectUnchanged("initial_state", init_);
    }
    s_.expectUnchanged("q", q_);
    s_.expectUnchanged("k", kk_);
    s_.expectUnchanged("v", v_);
    s_.expectUnchanged("g", g_);
    s_.expectUnchanged("beta", beta_);
    s_.expectUnchanged("a_log", aLog_);
    s_.expectUnchanged("dt_bias", dtBias_);
    s_.expectUnchanged("cu_seqlens", cu);

    s_.bind("q", {T_, H, K});
    s_.bind("k", {T_, H, K});
    s_.bind("v", {T_, H, V});
    s_.bind("g", {T_, H, K});
    s_.bind("beta", {T_, H});
    s_.bind("a_log");
    s_.bind("dt_bias");
    s_.bind("cu_seqlens", {N_ + 1});
    if (k_.initialState)
      s_.bind("initial_state", {N_, H, K, V});
    s_.bind("o", {T_, H, V});
    s_.bind("final_state", {N_, H, K, V});
  }

  void verify(CheckSet &checks, int) override {
    const int64_t H = k_.numHeads, K = k_.headDimK, V = k_.headDimV;
    HostTensor o = s_.download("o", act_, {T_, H, V});
    HostTensor fs = s_.download("final_state", LOOM_ELEM_F32, {N_, H, K, V});

    loom::oracle::KdaShape shape;
    shape.numHeads = H;
    shape.dimK = K;
    shape.dimV = V;
    shape.boundedGate = k_.gate == loom::spec::KdaGate::Bounded;
    shape.lowerBound = k_.lowerBound.value_or(-5.0);
    shape.scale = k_.scale ? *k_.scale : 1.0 / std::sqrt(double(K));
    shape.qkL2norm = k_.qkL2Norm;
    loom::oracle::KdaOracleResult ref = loom::oracle::kdaPrefillOracle(
        q_.toFloats(), kk_.toFloats(), v_.toFloats(), g_.toFloats(),
        beta_.toFloats(), aLog_.toFloats(), dtBias_.toFloats(), cu_,
        k_.initialState ? init_.toFloats() : std::vector<float>(), shape);

    std::vector<double> gotO = o.toDoubles(), gotS = fs.toDoubles();
    const std::string metric = "||d||/||ref||";
    checks.add("o", metric, kRelRms,
               relRmsError(gotO.data(), ref.o.data(), int64_t(gotO.size())),
               nonFiniteNote(gotO));
    int64_t at = -1;
    double win = worstRangeRelRms(gotO.data(), ref.o.data(), H * V,
                                  windows(T_, kWindow), &at);
    checks.add("o per 512-token window", "worst " + metric, kRelRms, win,
               at >= 0 ? "worst window: tokens [" +
                             std::to_string(at * kWindow) + ", " +
                             std::to_string(std::min(T_, (at + 1) * kWindow)) +
                             ")"
                       : "");
    std::vector<std::pair<int64_t, int64_t>> seqs;
    for (int64_t n = 0; n < N_; ++n)
      if (cu_[size_t(n + 1)] > cu_[size_t(n)])
        seqs.emplace_back(cu_[size_t(n)], cu_[size_t(n + 1)]);
    double perSeq = worstRangeRelRms(gotO.data(), ref.o.data(), H * V, seqs, &at);
    checks.add("o per sequence", "worst " + metric, kRelRms, perSeq,
               at >= 0 ? "worst: sequence of " +
                             std::to_string(seqs[size_t(at)].second -
                                            seqs[size_t(at)].first) +
                             " tokens at " + std::to_string(seqs[size_t(at)].first)
                       : "");
    checks.add("final_state", metric, kRelRms,
               relRmsError(gotS.data(), ref.finalState.data(),
                           int64_t(gotS.size())),
               nonFiniteNote(gotS));
    // Per sequence: a long sequence's state must not hide among short ones
    // whose state is mostly the (exactly kept) initial state.
    double perSeqState = worstRangeRelRms(gotS.data(), ref.finalState.data(),
                                          H * K * V, windows(N_, 1), &at);
    checks.add("final_state per sequence", "worst " + metric, kRelRms,
               perSeqState,
               at >= 0 ? "worst: sequence " + std::to_string(at) + " (" +
                             std::to_string(lens_[size_t(at)]) + " tokens)"
                       : "");
  }

private:
  static std::string nonFiniteNote(const std::vector<double> &v) {
    int64_t bad = 0;
    for (double x : v)
      bad += !std::isfinite(x);
    return bad ? std::to_string(bad) + " non-finite elements" : "";
  }

  Session &s_;
  loom::spec::KdaPrefillSpec k_;
  int32_t act_;
  std::vector<int64_t> lens_;
  int64_t T_ = 0, N_ = 0;
  std::vector<int32_t> cu_;
  HostTensor q_, kk_, v_, g_, beta_, aLog_, dtBias_, init_;
};

} // namespace

std::unique_ptr<Family> makeKdaFamily(Session &session,
                                      const loom::spec::Spec &spec,
                                      const RunOptions &options) {
  return std::make_unique<KdaFamily>(
      session, spec, std::get<loom::spec::KdaPrefillSpec>(spec.family), options);
}

} // namespace loom::check::detail
