//===- MlaCheck.cpp - mla_decode inputs and checks ------------------------===//
//
// Buffers (BuildGraph.cpp buildMlaDecode): q_nope [B,H,Dc], q_pe [B,H,Dp]
// inputs; ckv_cache [pages,P,Dc], kpe_cache [pages,P,Dp] caches (the whole
// pool is allocated, only used pages are written); kv_indptr [B+1],
// kv_indices [nnz], kv_lens [B] (i32 meta); o [B,H,Dc], lse [B,H] (f32)
// outputs.
//
// Per launch: a fresh page table (half consecutive, half scattered page
// ids), random q and cache rows, NaN in the unused tail slots of each
// request's last page and in a few unused pages next to used ones. The
// oracle reads a compacted copy of the used pages (so a 1M-page pool costs
// nothing on the host).
//
// Checks (DESIGN.md "MLA paged decode"):
//  * o: max over elements of |d| / (1e-2 + 1e-2 |ref|) <= 1;
//  * lse (fp32, base 2) of non-empty requests: |d| / (1e-3 + 1e-4 |ref|) <= 1;
//  * empty requests: o exactly 0 and lse exactly -inf (count of violations).
//
//===----------------------------------------------------------------------===//
#include "tools/check/CheckInternal.h"
#include "tools/check/ParallelDraw.h"

#include "tools/oracle/MlaOracle.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace loom::check::detail {
namespace {

constexpr double kOAtol = 1e-2, kORtol = 1e-2;
constexpr double kLseAtol = 1e-3, kLseRtol = 1e-4;
constexpr int64_t kNanPages = 8;

class MlaFamily : public Family {
public:
  MlaFamily(Session &s, const loom::spec::Spec &spec,
            const loom::spec::MlaDecodeSpec &m, const RunOptions &options)
      : s_(s), m_(m), act_(elemOf(m.dtype)) {
    const int64_t H = m.numHeads, Dc = m.headDimCkv, Dp = m.headDimKpe,
                  P = m.pageSize;
    s.expectBuffers(
        {{"q_nope", LOOM_ROLE_INPUT, act_, {-1, H, Dc}},
         {"q_pe", LOOM_ROLE_INPUT, act_, {-1, H, Dp}},
         {"ckv_cache", LOOM_ROLE_CACHE, act_, {m.maxPages, P, Dc}},
         {"kpe_cache", LOOM_ROLE_CACHE, act_, {m.maxPages, P, Dp}},
         {"kv_indptr", LOOM_ROLE_META, LOOM_ELEM_I32, {-1}},
         {"kv_indices", LOOM_ROLE_META, LOOM_ELEM_I32, {-1}},
         {"kv_lens", LOOM_ROLE_META, LOOM_ELEM_I32, {-1}},
         {"o", LOOM_ROLE_OUTPUT, act_, {-1, H, Dc}},
         {"lse", LOOM_ROLE_OUTPUT, LOOM_ELEM_F32, {-1, H}}},
        "mla_decode spec '" + spec.name + "'");

    lens_ = options.kvLens;
    if (lens_.empty()) {
      lens_ = {0, 1, 37, 2 * P + 5, 300, 1000};
      if (int64_t(lens_.size()) > m.maxBatch)
        lens_.resize(size_t(m.maxBatch));
    }
    B_ = int64_t(lens_.size());
    if (B_ < 1)
      fail("mla_decode: --kv-lens needs at least one request");
    if (B_ > m.maxBatch)
      fail("mla_decode: " + std::to_string(B_) +
           " requests (--kv-lens) exceed max_batch " +
           std::to_string(m.maxBatch));
    nnz_ = 0;
    for (int64_t len : lens_) {
      if (len < 0)
        fail("mla_decode: negative kv length " + std::to_string(len));
      nnz_ += (len + P - 1) / P;
    }
    if (nnz_ > m.maxPages)
      fail("mla_decode: the kv lengths need " + std::to_string(nnz_) +
           " pages, the pool has max_pages " + std::to_string(m.maxPages));
    for (auto [name, need] : {std::pair<const char *, int64_t>{"q_nope", B_},
                              {"kv_indptr", B_ + 1},
                              {"kv_indices", nnz_},
                              {"kv_lens", B_}})
      if (need > s.bound(name))
        fail(std::string("mla_decode: buffer '") + name + "' needs " +
             std::to_string(need) + " entries, the program's bound is " +
             std::to_string(s.bound(name)));

    size_t es = elemSize(act_);
    s.allocate("q_nope", size_t(B_ * H * Dc) * es);
    s.allocate("q_pe", size_t(B_ * H * Dp) * es);
    s.allocate("ckv_cache", size_t(m.maxPages * P * Dc) * es);
    s.allocate("kpe_cache", size_t(m.maxPages * P * Dp) * es);
    s.allocate("kv_indptr", size_t(B_ + 1) * 4);
    s.allocate("kv_indices", size_t(nnz_) * 4);
    s.allocate("kv_lens", size_t(B_) * 4);
    s.allocate("o", size_t(B_ * H * Dc) * es);
    s.allocate("lse", size_t(B_ * H) * 4);
  }

  std::string sizes() const override {
    std::ostringstream os;
    os << "batch " << B_ << ", kv_lens " << joinInts(lens_) << ", " << nnz_
       << " pages of " << m_.pageSize << " (pool " << m_.maxPages << ")";
    if (consecutive_ >= 0)
      os << ", " << int(consecutive_ * 100 + 0.5)
         << "% of neighbouring page ids consecutive";
    return os.str();
  }

  void prepare(Rng &rng, int) override {
    const int64_t H = m_.numHeads, Dc = m_.headDimCkv, Dp = m_.headDimKpe,
                  P = m_.pageSize;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    table_ = makePageTable(lens_, P, m_.maxPages, rng);
    consecutive_ = consecutiveFraction(table_);

    qNope_ = HostTensor(act_, {B_, H, Dc});
    qPe_ = HostTensor(act_, {B_, H, Dp});
    fillNonZero(qNope_, [&] { return rng.normal(0, 0.5); });
    fillNonZero(qPe_, [&] { return rng.normal(0, 0.5); });
    s_.upload("q_nope", qNope_);
    s_.upload("q_pe", qPe_);

    // Used pages: random rows, NaN in the tail of a request's last page.
    ckv_ = HostTensor(act_, {nnz_, P, Dc});
    kpe_ = HostTensor(act_, {nnz_, P, Dp});
    // Pages on all cores, one generator each (ParallelDraw.h): the trace
    // workloads hold up to ~75k pages.
    std::vector<Rng> gens = forkChunks(rng, nnz_);
    loom::oracle::parallelFor(nnz_, [&](int64_t k) {
      Rng &gen = gens[size_t(k)];
      int64_t valid = table_.validSlots(k);
      for (int64_t slot = 0; slot < P; ++slot) {
        for (int64_t d = 0; d < Dc; ++d) {
          int64_t i = (k * P + slot) * Dc + d;
          if (slot < valid)
            fillOne(ckv_, i, gen);
          else
            ckv_.set(i, nan);
        }
        for (int64_t d = 0; d < Dp; ++d) {
          int64_t i = (k * P + slot) * Dp + d;
          if (slot < valid)
            fillOne(kpe_, i, gen);
          else
            kpe_.set(i, nan);
        }
      }
    });
    for (int64_t k = 0; k < nnz_; ++k) {
      size_t es = elemSize(act_);
      int64_t page = table_.indices[size_t(k)];
      s_.upload("ckv_cache", static_cast<const char *>(ckv_.data()) +
                                 size_t(k * P * Dc) * es,
                size_t(P * Dc) * es, size_t(page * P * Dc) * es);
      s_.upload("kpe_cache", static_cast<const char *>(kpe_.data()) +
                                 size_t(k * P * Dp) * es,
                size_t(P * Dp) * es, size_t(page * P * Dp) * es);
      HostTensor ckvPage(act_, {P * Dc}), kpePage(act_, {P * Dp});
      std::memcpy(ckvPage.data(),
                  static_cast<const char *>(ckv_.data()) + size_t(k * P * Dc) * es,
                  ckvPage.sizeBytes());
      std::memcpy(kpePage.data(),
                  static_cast<const char *>(kpe_.data()) + size_t(k * P * Dp) * es,
                  kpePage.sizeBytes());
      s_.expectUnchanged("ckv_cache", ckvPage, size_t(page * P * Dc) * es);
      s_.expectUnchanged("kpe_cache", kpePage, size_t(page * P * Dp) * es);
    }
    // A few unused pages, the neighbours of used ones first, hold NaN.
    HostTensor nanCkv = poisonTensor(act_, P * Dc);
    HostTensor nanKpe = poisonTensor(act_, P * Dp);
    size_t es = elemSize(act_);
    for (int64_t page : pickUnusedPages(table_, m_.maxPages, kNanPages, rng)) {
      s_.upload("ckv_cache", nanCkv, size_t(page * P * Dc) * es);
      s_.upload("kpe_cache", nanKpe, size_t(page * P * Dp) * es);
    }

    HostTensor indptr(LOOM_ELEM_I32, {B_ + 1}), indices(LOOM_ELEM_I32, {nnz_}),
        lens(LOOM_ELEM_I32, {B_});
    for (int64_t b = 0; b <= B_; ++b)
      indptr.set(b, table_.indptr[size_t(b)]);
    for (int64_t k = 0; k < nnz_; ++k)
      indices.set(k, table_.indices[size_t(k)]);
    for (int64_t b = 0; b < B_; ++b)
      lens.set(b, table_.lens[size_t(b)]);
    s_.upload("kv_indptr", indptr);
    s_.upload("kv_indices", indices);
    s_.upload("kv_lens", lens);
    s_.expectUnchanged("q_nope", qNope_);
    s_.expectUnchanged("q_pe", qPe_);
    s_.expectUnchanged("kv_indptr", indptr);
    s_.expectUnchanged("kv_indices", indices);
    s_.expectUnchanged("kv_lens", lens);

    s_.bind("q_nope", {B_, H, Dc});
    s_.bind("q_pe", {B_, H, Dp});
    s_.bind("ckv_cache");
    s_.bind("kpe_cache");
    s_.bind("kv_indptr", {B_ + 1});
    s_.bind("kv_indices", {nnz_});
    s_.bind("kv_lens", {B_});
    s_.bind("o", {B_, H, Dc});
    s_.bind("lse", {B_, H});
  }

  void verify(CheckSet &checks, int) override {
    const int64_t H = m_.numHeads, Dc = m_.headDimCkv;
    HostTensor o = s_.download("o", act_, {B_, H, Dc});
    HostTensor lse = s_.download("lse", LOOM_ELEM_F32, {B_, H});

    // The oracle reads the compacted pages: page k of the table is row k.
    std::vector<int32_t> compact(static_cast<size_t>(nnz_));
    for (int64_t k = 0; k < nnz_; ++k)
      compact[size_t(k)] = int32_t(k);
    loom::oracle::MlaShape shape;
    shape.batch = B_;
    shape.numHeads = H;
    shape.dimCkv = Dc;
    shape.dimKpe = m_.headDimKpe;
    shape.pageSize = m_.pageSize;
    shape.smScale = m_.smScale;
    // An empty cache (all requests empty) still needs one row per cache.
    std::vector<float> ckv = ckv_.toFloats(), kpe = kpe_.toFloats();
    loom::oracle::MlaOracleResult ref = loom::oracle::mlaDecodeOracle(
        qNope_.toFloats(), qPe_.toFloats(), ckv, kpe, table_.indptr, compact,
        table_.lens, shape);

    std::vector<double> gotO = o.toDoubles(), gotLse = lse.toDoubles();
    ScaledError eo = maxScaledError(gotO.data(), ref.o.data(),
                                    int64_t(gotO.size()), kOAtol, kORtol);
    checks.add("o", "max |d|/(1e-2+1e-2|ref|)", 1.0, eo.worst,
               where(eo, gotO, ref.o, Dc * H, Dc, "o"));

    // lse of the non-empty requests; empty ones are checked exactly below.
    std::vector<double> g, r;
    for (int64_t b = 0; b < B_; ++b)
      if (lens_[size_t(b)] > 0)
        for (int64_t h = 0; h < H; ++h) {
          g.push_back(gotLse[size_t(b * H + h)]);
          r.push_back(ref.lse[size_t(b * H + h)]);
        }
    ScaledError el =
        maxScaledError(g.data(), r.data(), int64_t(g.size()), kLseAtol, kLseRtol);
    checks.add("lse", "max |d|/(1e-3+1e-4|ref|)", 1.0, el.worst,
               el.worstIndex >= 0
                   ? "worst: got " + formatNumber(g[size_t(el.worstIndex)]) +
                         ", ref " + formatNumber(r[size_t(el.worstIndex)])
                   : "");

    int64_t empty = 0, bad = 0;
    for (int64_t b = 0; b < B_; ++b) {
      if (lens_[size_t(b)] != 0)
        continue;
      ++empty;
      for (int64_t h = 0; h < H; ++h) {
        double l = gotLse[size_t(b * H + h)];
        bad += !(std::isinf(l) && l < 0);
        for (int64_t d = 0; d < Dc; ++d)
          bad += gotO[size_t((b * H + h) * Dc + d)] != 0.0;
      }
    }
    if (empty)
      checks.add("empty requests", "o != 0 or lse != -inf", 0, double(bad),
                 std::to_string(empty) + " empty request(s)");
  }

private:
  /// Cache rows: N(0, 1), like normalised latent rows.
  static void fillOne(HostTensor &t, int64_t i, Rng &rng) {
    for (int tries = 0; tries < 16; ++tries) {
      t.set(i, rng.normal());
      if (t.get(i) != 0)
        return;
    }
  }

  static std::string where(const ScaledError &e, const std::vector<double> &got,
                           const std::vector<double> &ref, int64_t perRequest,
                           int64_t perHead, const char *what) {
    if (e.worstIndex < 0)
      return "";
    int64_t i = e.worstIndex;
    std::ostringstream os;
    os << "worst: " << what << "[" << i / perRequest << ", "
       << (i % perRequest) / perHead << ", " << i % perHead << "] got "
       << formatNumber(got[size_t(i)]) << ", ref " << formatNumber(ref[size_t(i)]);
    if (e.nonFinite)
      os << "; " << e.nonFinite << " non-finite";
    return os.str();
  }

  Session &s_;
  loom::spec::MlaDecodeSpec m_;
  int32_t act_;
  std::vector<int64_t> lens_;
  int64_t B_ = 0, nnz_ = 0;
  double consecutive_ = -1;
  PageTable table_;
  HostTensor qNope_, qPe_, ckv_, kpe_;
};

} // namespace

std::unique_ptr<Family> makeMlaFamily(Session &session,
                                      const loom::spec::Spec &spec,
                                      const RunOptions &options) {
  return std::make_unique<MlaFamily>(
      session, spec, std::get<loom::spec::MlaDecodeSpec>(spec.family), options);
}

} // namespace loom::check::detail
