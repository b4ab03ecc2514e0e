//===- DecoderCheck.cpp - decoder inputs and checks -----------------------===//
//
// Buffers (BuildGraph.cpp buildDecoder), L = spec layers:
//   hidden [B,hid] input            | token_ids [B] i32 + embed [vocab,hid] (head)
//   attn_norm [L,hid], w_q [L,Hq*hd,hid], w_k/w_v [L,Hkv*hd,hid],
//   w_o [L,hid,Hq*hd], (q_norm/k_norm [L,hd] with qk_norm), ffn_norm [L,hid],
//   w_gate/w_up [L,ffn,hid], w_down [L,hid,ffn], (final_norm [hid],
//   lm_head [vocab,hid] with head) weights;
//   k_cache/v_cache [L,pages,P,Hkv,hd] caches;
//   positions, slot_mapping [B], kv_indptr [B+1], kv_indices [nnz],
//   kv_lens [B] (i32 meta);
//   hidden_out [B,hid] output       | next_tokens [B] i32 (head).
//
// Weights are drawn once (they are large) with realistic scales so
// activations stay O(1): matrices U(-a, a) with a = sqrt(3 / fan_in)
// (std 1/sqrt(fan_in)), norm weights U(0.8, 1.2), embedding rows with unit
// variance. Every launch draws a fresh page table, fresh cache contents for
// the kv_lens[b] - 1 previous tokens of each request in every layer, NaN in
// the new token's slot (kv_append must write it) and in the unused tail of
// each last page and in a few unused pages, and a fresh input.
//
// References. The oracle (tools/oracle/DecoderOracle) runs layer by layer on
// the weights read back from the device, over a compacted copy of the used
// cache pages, in its two modes side by side: storage-faithful (each op in
// double, its result rounded to the bf16 buffer the graph stores it in) and
// pure fp64. Both are checked against the same 1e-2 bounds.
//
// Deep stacks: a layer pair at a time. Storing to bf16 is a step function:
// where the device's fp32 value and the oracle's value fall on both sides of
// a rounding boundary they end up a whole ulp apart, so a 1e-6 difference
// before a store becomes an ulp-sized one after it for a small fraction of
// the elements, which the next op spreads over all of its outputs. Against
// either reference a correct program's error thus grows by about 1e-3 per
// layer on these random stacks (host target, Llama-3-8B shapes: hidden_out
// 4.6e-3 after 2 layers and 1.04e-2 after 8 against the storage-faithful
// reference; tools/check/README.md). No independent reference can hold
// DESIGN.md's 1e-2 after 32 free-running layers. So in a stack of more than
// kMaxActive layers each launch keeps the residual branches of at most
// kMaxActive layers ("active"): the others get w_o = w_down = 0, so their
// attention and MLP add exactly 0 and the bf16 residual stream passes
// through them bit-exactly (x + 0 rounds to x), on the device and in the
// oracle alike; their K/V cache rows are still computed and checked.
// Launch 1 runs every layer active (the free-running stack: the K/V rows of
// the layers behind at most kMaxActive active ones are checked; the other
// layers' errors and hidden_out are reported as drift). Launch n >= 2
// activates layers 2p and 2p+1, p = (n - 2) mod ceil(L / 2): with
// 1 + ceil(L / 2) launches every layer runs active once, and the weights
// drawn for its w_o / w_down are put back (same draws) when it does.
// Without the oracle (--check=none) every launch runs all layers active, and
// so do the timed launches after the checked ones.
//
// Checks:
//  * hidden_out: ||d|| / ||ref|| <= 1e-2 (DESIGN.md) against each reference,
//    in every launch with at most kMaxActive active layers;
//  * k_cache / v_cache new rows (the new token's K after RoPE, and V, of a
//    layer): ||d|| / ||ref|| <= 1e-2 against each reference, worst over the
//    layers with at most kMaxActive active layers before them;
//  * cache rows kept: every other element of the used pages (older tokens,
//    NaN tails) is bit-identical to what was written (count, bound 0);
//  * weights kept: the weights read back after a launch hash (per
//    1M-element chunk) to what was uploaded (count of chunks, bound 0):
//    every weight after the first and the last launch, and in an isolated
//    launch in between the slices the oracle reads;
//  * next_tokens (head): equals the oracle's argmax wherever the oracle's
//    logit gap between its choice and the kernel's exceeds 5% of the row's
//    logit RMS (a clear mismatch fails; near-ties that differ are counted
//    and reported but pass); a token outside [0, vocab) always fails.
//
//===----------------------------------------------------------------------===//
#include "tools/check/CheckInternal.h"
#include "tools/check/ParallelDraw.h"

#include "tools/oracle/DecoderOracle.h"
#include "tools/oracle/Parallel.h"
#include "tools/oracle/Storage.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

namespace loom::check::detail {
namespace {

using loom::oracle::IVec;
using loom::oracle::Vec;

constexpr double kHiddenRel = 1e-2;
constexpr double kCacheRel = 1e-2;
/// Residual branches live at once in a launch (see the top): with 2, the
/// worst checked error of a correct program is about 5.7e-3 (K/V rows
/// behind two active layers, either reference, 32-layer Llama-3-8B on the
/// host target), a bit over half the bound.
constexpr int64_t kMaxActive = 2;
/// A kernel token that differs from the oracle's argmax fails only when the
/// oracle's logit gap between the two exceeds this fraction of the logit RMS
/// of the row. With a hidden-state error at the 1e-2 bound plus the bf16
/// rounding of the normed hidden (~3e-3), a logit difference is off by about
/// sqrt(2) * 1.3e-2 * rms(logits) ~ 1.8e-2 * rms; 5e-2 is ~2.7 of those.
constexpr double kLogitGapTol = 5e-2;
constexpr int64_t kNanPages = 8;
/// LM head rows per oracle call (keeps the double copy small).
constexpr int64_t kVocabChunk = 8192;

struct WeightDef {
  std::string name;
  std::vector<int64_t> dims; ///< without the leading L for stacked ones
  bool stacked;
  int64_t fanIn; ///< 0: a norm weight, U(0.8, 1.2); -1: embedding rows
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t x : dims)
      n *= x;
    return n;
  }
  /// w_o / w_down: the residual branches' last projections, zero in the
  /// layers a launch keeps inactive.
  bool branchOut() const { return name == "w_o" || name == "w_down"; }
  /// What decoderLayerKv reads: all an inactive layer needs in the oracle.
  bool kvPath() const {
    return name == "attn_norm" || name == "w_k" || name == "w_v" ||
           name == "k_norm";
  }
};

/// One uploaded copy of a weight (a layer's slice of a stacked one).
struct Slice {
  Rng gen{0};                   ///< its generator before the draw (copied)
  std::vector<uint64_t> hashes; ///< of the drawn values, per chunk
  bool zero = false;            ///< on the device as zeros (inactive layer)
};

/// hashBytes of each kDrawChunk-element chunk of `count` elements of `es`
/// bytes, on all cores.
std::vector<uint64_t> chunkHashes(const void *data, int64_t count, size_t es) {
  const int64_t chunks = (count + kDrawChunk - 1) / kDrawChunk;
  std::vector<uint64_t> out(static_cast<size_t>(chunks));
  loom::oracle::parallelFor(chunks, [&](int64_t c) {
    const int64_t n = std::min(kDrawChunk, count - c * kDrawChunk);
    out[size_t(c)] = hashBytes(static_cast<const char *>(data) +
                                   size_t(c * kDrawChunk) * es,
                               size_t(n) * es, uint64_t(c));
  });
  return out;
}

class DecoderFamily : public Family {
public:
  DecoderFamily(Session &s, const loom::spec::Spec &spec,
                const loom::spec::DecoderSpec &d, const RunOptions &options,
                Rng &rng)
      : s_(s), d_(d), act_(elemOf(d.dtype)) {
    const int64_t L = d.layers, hid = d.hidden, hq = d.numQHeads,
                  hkv = d.numKvHeads, hd = d.headDim, ffn = d.ffn,
                  P = d.pageSize;
    if (d.head)
      weights_.push_back({"embed", {d.vocab, hid}, false, -1});
    weights_.push_back({"attn_norm", {hid}, true, 0});
    weights_.push_back({"w_q", {hq * hd, hid}, true, hid});
    weights_.push_back({"w_k", {hkv * hd, hid}, true, hid});
    weights_.push_back({"w_v", {hkv * hd, hid}, true, hid});
    weights_.push_back({"w_o", {hid, hq * hd}, true, hq * hd});
    if (d.qkNorm) {
      weights_.push_back({"q_norm", {hd}, true, 0});
      weights_.push_back({"k_norm", {hd}, true, 0});
    }
    weights_.push_back({"ffn_norm", {hid}, true, 0});
    weights_.push_back({"w_gate", {ffn, hid}, true, hid});
    weights_.push_back({"w_up", {ffn, hid}, true, hid});
    weights_.push_back({"w_down", {hid, ffn}, true, ffn});
    if (d.head) {
      weights_.push_back({"final_norm", {hid}, false, 0});
      weights_.push_back({"lm_head", {d.vocab, hid}, false, hid});
    }

    std::vector<ExpectedBuffer> expected;
    if (d.head)
      expected.push_back({"token_ids", LOOM_ROLE_INPUT, LOOM_ELEM_I32, {-1}});
    else
      expected.push_back({"hidden", LOOM_ROLE_INPUT, act_, {-1, hid}});
    for (const WeightDef &w : weights_) {
      std::vector<int64_t> dims = w.dims;
      if (w.stacked)
        dims.insert(dims.begin(), L);
      // BuildGraph declares embed right after token_ids; order is not checked.
      expected.push_back({w.name, LOOM_ROLE_WEIGHT, act_, dims});
    }
    std::vector<int64_t> cacheDims = {L, d.maxPages, P, hkv, hd};
    expected.push_back({"k_cache", LOOM_ROLE_CACHE, act_, cacheDims});
    expected.push_back({"v_cache", LOOM_ROLE_CACHE, act_, cacheDims});
    for (const char *m :
         {"positions", "slot_mapping", "kv_indptr", "kv_indices", "kv_lens"})
      expected.push_back({m, LOOM_ROLE_META, LOOM_ELEM_I32, {-1}});
    if (d.head)
      expected.push_back({"next_tokens", LOOM_ROLE_OUTPUT, LOOM_ELEM_I32, {-1}});
    else
      expected.push_back({"hidden_out", LOOM_ROLE_OUTPUT, act_, {-1, hid}});
    s.expectBuffers(expected, "decoder spec '" + spec.name + "' with " +
                                  std::to_string(L) + " layer(s)");

    lens_ = options.kvLens;
    if (lens_.empty()) {
      lens_ = {1, 17, 40};
      if (int64_t(lens_.size()) > d.maxBatch)
        lens_.resize(size_t(d.maxBatch));
    }
    B_ = int64_t(lens_.size());
    if (B_ < 1)
      fail("decoder: --kv-lens needs at least one request");
    if (B_ > d.maxBatch)
      fail("decoder: " + std::to_string(B_) +
           " requests (--kv-lens) exceed max_batch " +
           std::to_string(d.maxBatch));
    for (int64_t len : lens_) {
      if (len < 1)
        fail("decoder: every kv length must be >= 1 (it counts the new "
             "token), got " +
             std::to_string(len));
      nnz_ += (len + P - 1) / P;
    }
    if (nnz_ > d.maxPages)
      fail("decoder: the kv lengths need " + std::to_string(nnz_) +
           " pages, the pool has max_pages " + std::to_string(d.maxPages));
    if (d.maxPages * P > std::numeric_limits<int32_t>::max())
      fail("decoder: slot ids (page * page_size) do not fit int32");
    for (auto [name, need] :
         {std::pair<const char *, int64_t>{d.head ? "token_ids" : "hidden", B_},
          {"positions", B_},
          {"slot_mapping", B_},
          {"kv_indptr", B_ + 1},
          {"kv_indices", nnz_},
          {"kv_lens", B_},
          {d.head ? "next_tokens" : "hidden_out", B_}})
      if (need > s.bound(name))
        fail(std::string("decoder: buffer '") + name + "' needs " +
             std::to_string(need) + " entries, the program's bound is " +
             std::to_string(s.bound(name)));

    const size_t es = elemSize(act_);
    if (d.head) {
      s.allocate("token_ids", size_t(B_) * 4);
      s.allocate("next_tokens", size_t(B_) * 4);
    } else {
      s.allocate("hidden", size_t(B_ * hid) * es);
      s.allocate("hidden_out", size_t(B_ * hid) * es);
    }
    pageElems_ = P * hkv * hd;
    s.allocate("k_cache", size_t(L * d.maxPages * pageElems_) * es);
    s.allocate("v_cache", size_t(L * d.maxPages * pageElems_) * es);
    for (const char *m : {"positions", "slot_mapping", "kv_lens"})
      s.allocate(m, size_t(B_) * 4);
    s.allocate("kv_indptr", size_t(B_ + 1) * 4);
    s.allocate("kv_indices", size_t(nnz_) * 4);

    // Weights: drawn once, a slice at a time, on all cores (ParallelDraw.h:
    // the same weights for a seed whatever the threads). Each slice keeps
    // its generator, so an inactive layer's w_o / w_down can be drawn again.
    slices_.resize(weights_.size());
    for (size_t wi = 0; wi < weights_.size(); ++wi) {
      const WeightDef &w = weights_[wi];
      const int64_t n = w.numel(), copies = w.stacked ? L : 1;
      s.allocate(w.name, size_t(copies * n) * es);
      HostTensor t(act_, w.dims);
      for (int64_t l = 0; l < copies; ++l) {
        Slice &slice = slices_[wi].emplace_back();
        slice.gen = rng.fork(uint64_t(l));
        draw(w, slice.gen, t);
        slice.hashes = chunkHashes(t.data(), n, es);
        s.upload(w.name, t, size_t(l * n) * es);
      }
      if (w.branchOut()) {
        HostTensor zeros(act_, w.dims);
        zeroHashes_[w.name] = chunkHashes(zeros.data(), n, es);
      }
    }
    isolate_ = options.oracle && L > kMaxActive;
    launches_ = options.launches;
    benchAfter_ = options.bench > 0;
    active_.assign(size_t(L), true);
  }

  std::string sizes() const override {
    std::ostringstream os;
    os << d_.layers << " layer(s), batch " << B_ << ", kv_lens (with the new "
       << "token) " << joinInts(lens_) << ", " << nnz_ << " pages of "
       << d_.pageSize << " per layer (pool " << d_.maxPages << ")"
       << (d_.head ? ", with head (vocab " + std::to_string(d_.vocab) + ")"
                   : "");
    if (isolate_) {
      const int64_t pairs = (d_.layers + 1) / 2;
      const int64_t covered =
          std::min<int64_t>(pairs, std::max<int64_t>(0, launches_ - 1));
      os << "; launch 1: all layers active, launches 2..: one layer pair "
            "active (the others pass the residual stream through), "
         << covered << " of " << pairs << " pairs covered"
         << (covered < pairs ? " (all with --launches " +
                                   std::to_string(1 + pairs) + ")"
                             : "");
    }
    return os.str();
  }

  void prepare(Rng &rng, int launch) override {
    const int64_t L = d_.layers, hid = d_.hidden, P = d_.pageSize;
    const size_t es = elemSize(act_);
    setActive(activeLayers(launch));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    table_ = makePageTable(lens_, P, d_.maxPages, rng);

    // The new token of request b: position len-1, in page k of the table.
    newPage_.assign(size_t(B_), 0);
    newSlot_.assign(size_t(B_), 0);
    HostTensor positions(LOOM_ELEM_I32, {B_}), slots(LOOM_ELEM_I32, {B_});
    for (int64_t b = 0; b < B_; ++b) {
      int64_t pos = lens_[size_t(b)] - 1;
      int64_t k = table_.indptr[size_t(b)] + pos / P;
      newPage_[size_t(b)] = k;
      newSlot_[size_t(b)] = pos % P;
      positions.set(b, double(pos));
      slots.set(b, double(int64_t(table_.indices[size_t(k)]) * P + pos % P));
    }

    // Caches: older tokens random, the new slot and the tails NaN.
    kStaged_.assign(size_t(L), HostTensor());
    vStaged_.assign(size_t(L), HostTensor());
    std::vector<int64_t> nanPages =
        pickUnusedPages(table_, d_.maxPages, kNanPages, rng);
    HostTensor nanPage = poisonTensor(act_, pageElems_);
    const int64_t rowElems = pageElems_ / P;
    for (int64_t l = 0; l < L; ++l) {
      for (HostTensor *t : {&kStaged_[size_t(l)], &vStaged_[size_t(l)]}) {
        *t = HostTensor(act_, {nnz_, pageElems_});
        // One generator per page (ParallelDraw.h), pages on all cores.
        std::vector<Rng> gens = forkChunks(rng, nnz_);
        loom::oracle::parallelFor(nnz_, [&](int64_t k) {
          Rng &gen = gens[size_t(k)];
          int64_t valid = table_.validSlots(k);
          int64_t b = table_.requestOf(k);
          for (int64_t slot = 0; slot < P; ++slot) {
            bool isNew = newPage_[size_t(b)] == k && newSlot_[size_t(b)] == slot;
            for (int64_t e = 0; e < rowElems; ++e) {
              int64_t i = k * pageElems_ + slot * rowElems + e;
              if (slot < valid && !isNew) {
                t->set(i, gen.normal());
                if (t->get(i) == 0)
                  t->set(i, 0.5);
              } else {
                t->set(i, nan);
              }
            }
          }
        });
      }
      for (int64_t k = 0; k < nnz_; ++k) {
        size_t dst = size_t((l * d_.maxPages + table_.indices[size_t(k)]) *
                            pageElems_) * es;
        size_t src = size_t(k * pageElems_) * es;
        s_.upload("k_cache", static_cast<const char *>(kStaged_[size_t(l)].data()) + src,
                  size_t(pageElems_) * es, dst);
        s_.upload("v_cache", static_cast<const char *>(vStaged_[size_t(l)].data()) + src,
                  size_t(pageElems_) * es, dst);
      }
      for (int64_t page : nanPages) {
        size_t dst = size_t((l * d_.maxPages + page) * pageElems_) * es;
        s_.upload("k_cache", nanPage, dst);
        s_.upload("v_cache", nanPage, dst);
      }
    }

    // The step's input.
    if (d_.head) {
      tokens_ = HostTensor(LOOM_ELEM_I32, {B_});
      for (int64_t b = 0; b < B_; ++b)
        tokens_.set(b, double(rng.index(d_.vocab)));
      s_.upload("token_ids", tokens_);
      s_.expectUnchanged("token_ids", tokens_);
    } else {
      hidden_ = HostTensor(act_, {B_, hid});
      fillNonZero(hidden_, [&] { return rng.normal(); });
      s_.upload("hidden", hidden_);
      s_.expectUnchanged("hidden", hidden_);
    }

    HostTensor indptr(LOOM_ELEM_I32, {B_ + 1}), indices(LOOM_ELEM_I32, {nnz_}),
        lens(LOOM_ELEM_I32, {B_});
    for (int64_t b = 0; b <= B_; ++b)
      indptr.set(b, table_.indptr[size_t(b)]);
    for (int64_t k = 0; k < nnz_; ++k)
      indices.set(k, table_.indices[size_t(k)]);
    for (int64_t b = 0; b < B_; ++b)
      lens.set(b, table_.lens[size_t(b)]);
    s_.upload("positions", positions);
    s_.upload("slot_mapping", slots);
    s_.upload("kv_indptr", indptr);
    s_.upload("kv_indices", indices);
    s_.upload("kv_lens", lens);
    s_.expectUnchanged("positions", positions);
    s_.expectUnchanged("slot_mapping", slots);
    s_.expectUnchanged("kv_indptr", indptr);
    s_.expectUnchanged("kv_indices", indices);
    s_.expectUnchanged("kv_lens", lens);

    if (d_.head) {
      s_.bind("token_ids", {B_});
      s_.bind("next_tokens", {B_});
    } else {
      s_.bind("hidden", {B_, hid});
      s_.bind("hidden_out", {B_, hid});
    }
    for (const WeightDef &w : weights_)
      s_.bind(w.name);
    s_.bind("k_cache");
    s_.bind("v_cache");
    s_.bind("positions", {B_});
    s_.bind("slot_mapping", {B_});
    s_.bind("kv_indptr", {B_ + 1});
    s_.bind("kv_indices", {nnz_});
    s_.bind("kv_lens", {B_});
  }

  void verify(CheckSet &checks, int launch) override {
    const int64_t L = d_.layers, hid = d_.hidden, P = d_.pageSize;
    const int64_t rowElems = pageElems_ / P;

    // The step on the compacted pages: page k of the table is page k here.
    loom::oracle::StepMeta meta;
    meta.batch = B_;
    for (int64_t b = 0; b < B_; ++b) {
      meta.positions.push_back(lens_[size_t(b)] - 1);
      meta.slotMapping.push_back(newPage_[size_t(b)] * P + newSlot_[size_t(b)]);
    }
    meta.table.indptr.assign(table_.indptr.begin(), table_.indptr.end());
    for (int64_t k = 0; k < nnz_; ++k)
      meta.table.indices.push_back(k);
    meta.table.lens.assign(table_.lens.begin(), table_.lens.end());

    Vec x;
    if (d_.head) {
      // embedding: a gather of the token rows (read back from the device).
      const size_t es = elemSize(act_);
      for (int64_t b = 0; b < B_; ++b) {
        int64_t id = int64_t(tokens_.get(b));
        Vec row = s_.download("embed", act_, {hid}, size_t(id * hid) * es)
                      .toDoubles();
        x.insert(x.end(), row.begin(), row.end());
      }
    } else {
      x = hidden_.toDoubles();
    }

    // Both references, layer by layer on the same weights: [0]
    // storage-faithful, [1] pure fp64.
    Reference refs[2];
    refs[0].shape = oracleShape(storageOf(act_));
    refs[1].shape = oracleShape(loom::oracle::Storage::Exact);
    for (Reference &r : refs)
      r.x = x;

    // Elements of the new tokens' rows in the compacted pages.
    std::vector<int64_t> newElems;
    for (int64_t b = 0; b < B_; ++b)
      for (int64_t e = 0; e < rowElems; ++e)
        newElems.push_back(newPage_[size_t(b)] * pageElems_ +
                           newSlot_[size_t(b)] * rowElems + e);
    std::vector<char> isNew(size_t(nnz_ * pageElems_), 0);
    for (int64_t i : newElems)
      isNew[size_t(i)] = 1;
    auto newRows = [&](auto get) {
      Vec out;
      out.reserve(newElems.size());
      for (int64_t i : newElems)
        out.push_back(get(i));
      return out;
    };

    // Every weight is read back and verified after the first and the last
    // launch; in between only what the oracle reads (an isolated launch of
    // an 8B stack would otherwise copy 14 GB back for ~1 GB of use).
    const bool allWeights = !isolate_ || launch == 1 || launch == launches_;
    int64_t changed = 0, activeSoFar = 0, lastChecked = -1, nonFinite = 0;
    std::string changedWhere;
    WeightCheck weightsKept;
    loom::oracle::LayerWeights &w = layerWeights_;
    for (int64_t l = 0; l < L; ++l) {
      const bool active = active_[size_t(l)];
      // Behind at most kMaxActive active residual branches: checked.
      const bool checked = activeSoFar <= kMaxActive;
      readLayer(l, active, allWeights, w, weightsKept);

      // The device's cache pages of this layer, compacted the same way.
      HostTensor gotK(act_, {nnz_, pageElems_}), gotV(act_, {nnz_, pageElems_});
      readPages("k_cache", l, gotK);
      readPages("v_cache", l, gotV);
      Vec newGotK = newRows([&](int64_t i) { return gotK.get(i); });
      Vec newGotV = newRows([&](int64_t i) { return gotV.get(i); });
      for (const Vec *rows : {&newGotK, &newGotV})
        for (double e : *rows)
          nonFinite += !std::isfinite(e);

      // One compacted cache for both references: each appends its new rows
      // to the same slots (overwriting the other's) and reads nothing else
      // that differs.
      loom::oracle::LayerCache &cache = layerCache_;
      widenAll(kStaged_[size_t(l)], cache.k);
      widenAll(vStaged_[size_t(l)], cache.v);
      for (Reference &r : refs) {
        if (active)
          r.x = loom::oracle::decoderLayer(r.shape, w, r.x, meta, cache);
        else // zero w_o and w_down: the layer's output is its input
          loom::oracle::decoderLayerKv(r.shape, w, r.x, meta, cache);
        Vec refK = newRows([&](int64_t i) { return cache.k[size_t(i)]; });
        Vec refV = newRows([&](int64_t i) { return cache.v[size_t(i)]; });
        r.k.add(l, checked,
                relRmsError(newGotK.data(), refK.data(), int64_t(refK.size())));
        r.v.add(l, checked,
                relRmsError(newGotV.data(), refV.data(), int64_t(refV.size())));
      }
      if (checked)
        lastChecked = l;
      activeSoFar += active;

      // Every other element of the used pages must be what was written
      // (bytes: one storage type on both sides; pages on all cores).
      std::vector<int64_t> changedPage(size_t(nnz_), 0);
      const size_t es = elemSize(act_);
      loom::oracle::parallelFor(nnz_, [&](int64_t k) {
        for (int64_t i = k * pageElems_; i < (k + 1) * pageElems_; ++i) {
          if (isNew[size_t(i)])
            continue;
          for (auto [got, want] :
               {std::pair<const HostTensor *, const HostTensor *>{
                    &gotK, &kStaged_[size_t(l)]},
                {&gotV, &vStaged_[size_t(l)]}})
            changedPage[size_t(k)] +=
                std::memcmp(static_cast<const char *>(got->data()) + size_t(i) * es,
                            static_cast<const char *>(want->data()) + size_t(i) * es,
                            es) != 0;
        }
      });
      int64_t changedHere = 0;
      for (int64_t n : changedPage)
        changedHere += n;
      if (changedHere)
        changedWhere += (changedWhere.empty() ? "layer " : ", layer ") +
                        std::to_string(l) + ": " + std::to_string(changedHere);
      changed += changedHere;
    }
    for (size_t wi = 0; wi < weights_.size(); ++wi)
      if (!weights_[wi].stacked && allWeights)
        verifySlice(wi, 0, weightsKept);

    const Reference &faithful = refs[0], &pure = refs[1];
    const bool allChecked = lastChecked == L - 1;
    const bool hiddenChecked = activeSoFar <= kMaxActive;
    // The free-running launch of a deep stack checks only its first layers:
    // its entries are named apart from the isolated launches' ones.
    const std::string mode =
        allChecked ? "" : " (all layers active, first " +
                              std::to_string(lastChecked + 1) + " checked)";
    const std::string activeNote =
        isolate_ && !allChecked ? ""
        : isolate_ ? "active layers " + activeList() + "; "
                   : "";
    Vec got; // hidden_out
    std::string drift;
    if (!d_.head) {
      got = s_.download("hidden_out", act_, {B_, hid}).toDoubles();
      for (double e : got)
        nonFinite += !std::isfinite(e);
      auto dist = [&](const Reference &r) {
        return formatNumber(
            relRmsError(got.data(), r.x.data(), int64_t(got.size())));
      };
      if (!hiddenChecked)
        drift = "; drift (not checked) of hidden_out after " +
                std::to_string(L) + " active layers: " + dist(faithful) +
                " storage-faithful, " + dist(pure) + " pure fp64";
    }
    // Every layer's new K/V rows and hidden_out hold numbers, in every
    // launch (also where the drift is not checked against the bound).
    checks.add(d_.head ? "no NaN/inf in K/V rows"
                       : "no NaN/inf in K/V rows, hidden_out",
               "non-finite elements", 0, double(nonFinite));
    for (auto [name, f, p] :
         {std::tuple<const char *, const PerLayer *, const PerLayer *>{
              "k_cache new rows", &faithful.k, &pure.k},
          {"v_cache new rows", &faithful.v, &pure.v}}) {
      const std::string metric = allChecked ? "worst layer ||d||/||ref||"
                                            : "worst checked layer ||d||/||ref||";
      checks.add(name + mode, metric, kCacheRel, f->worst,
                 activeNote + f->describe(L) + drift);
      checks.add(name + mode + " (pure fp64)", metric, kCacheRel, p->worst,
                 activeNote + p->describe(L));
    }
    checks.add("cache rows kept", "elements changed", 0, double(changed),
               changed ? "older tokens or NaN tails overwritten: " + changedWhere
                       : "");
    checks.add("weights kept", "1M-element chunks changed", 0,
               double(weightsKept.changed),
               weightsKept.changed ? "changed: " + weightsKept.where
               : allWeights        ? "every weight read back"
                                   : "the weights the oracle read");

    if (!d_.head && hiddenChecked) {
      auto compare = [&](const Reference &r, const std::string &name) {
        double err = relRmsError(got.data(), r.x.data(), int64_t(got.size()));
        // Per request too, in the note: a wrong request shows up here.
        std::string per;
        for (int64_t b = 0; b < B_; ++b)
          per += (b ? " " : "") +
                 formatNumber(relRmsError(got.data() + b * hid,
                                          r.x.data() + b * hid, hid));
        checks.add(name, "||d||/||ref||", kHiddenRel, err,
                   activeNote + "per request " + per);
      };
      compare(faithful, "hidden_out");
      compare(pure, "hidden_out (pure fp64)");
    }
    if (d_.head && hiddenChecked)
      verifyHead(checks, faithful.x, faithful.shape.storage);

    // Timed launches follow the last checked one: give them the drawn
    // weights in every layer.
    if (launch == launches_ && benchAfter_)
      setActive(std::vector<bool>(size_t(L), true));
  }

private:
  /// One reference's K or V row errors over the layers.
  struct PerLayer {
    double worst = 0;   ///< over the checked layers
    int64_t worstLayer = -1;
    std::string list;   ///< every layer's, "*" after unchecked ones
    void add(int64_t l, bool checked, double e) {
      list += (l ? " " : "") + formatNumber(e) + (checked ? "" : "*");
      if (checked && (worstLayer < 0 || !(e <= worst))) { // NaN is worst
        worst = e;
        worstLayer = l;
      }
    }
    std::string describe(int64_t layers) const {
      return "worst layer " + std::to_string(worstLayer) +
             (layers > 1 ? "; per layer " + list : "");
    }
  };
  /// One oracle run through the stack (DecoderOracle.h modes).
  struct Reference {
    loom::oracle::DecoderShape shape;
    Vec x; ///< the residual stream after the layers run so far
    PerLayer k, v;
  };
  /// Weight chunks found changed on the device.
  struct WeightCheck {
    int64_t changed = 0;
    std::string where;
  };

  /// Launch n's active layers (see the top of the file).
  std::vector<bool> activeLayers(int launch) const {
    const int64_t L = d_.layers;
    std::vector<bool> on(size_t(L), true);
    if (!isolate_ || launch <= 1)
      return on;
    const int64_t pair = (launch - 2) % ((L + 1) / 2);
    for (int64_t l = 0; l < L; ++l)
      on[size_t(l)] = l / 2 == pair;
    return on;
  }

  std::string activeList() const {
    std::string out;
    for (size_t l = 0; l < active_.size(); ++l)
      if (active_[l])
        out += (out.empty() ? "" : ",") + std::to_string(l);
    return out;
  }

  /// Puts the drawn w_o / w_down into the active layers and zeros into the
  /// others, uploading only the slices that change.
  void setActive(const std::vector<bool> &on) {
    const size_t es = elemSize(act_);
    for (size_t wi = 0; wi < weights_.size(); ++wi) {
      const WeightDef &w = weights_[wi];
      if (!w.branchOut())
        continue;
      const int64_t n = w.numel();
      for (size_t l = 0; l < on.size(); ++l) {
        Slice &slice = slices_[wi][l];
        if (slice.zero == !on[l])
          continue;
        HostTensor t(act_, w.dims); // zeros
        if (on[l])
          draw(w, slice.gen, t);
        s_.upload(w.name, t, size_t(int64_t(l) * n) * es);
        slice.zero = !on[l];
      }
    }
    active_ = on;
  }

  /// Draws weight w into t from a copy of `gen` (so the same draws again).
  static void draw(const WeightDef &w, Rng gen, HostTensor &t) {
    if (w.fanIn == 0) {
      fillNonZeroParallel(t, gen,
                          [](Rng &g, int64_t) { return g.uniform(0.8, 1.2); });
      return;
    }
    const double a =
        w.fanIn < 0 ? std::sqrt(3.0) : std::sqrt(3.0 / double(w.fanIn));
    fillNonZeroParallel(t, gen,
                        [a](Rng &g, int64_t) { return g.uniform(-a, a); });
  }

  loom::oracle::DecoderShape oracleShape(loom::oracle::Storage storage) const {
    loom::oracle::DecoderShape shape;
    shape.hidden = d_.hidden;
    shape.qHeads = d_.numQHeads;
    shape.kvHeads = d_.numKvHeads;
    shape.headDim = d_.headDim;
    shape.ffn = d_.ffn;
    shape.pageSize = d_.pageSize;
    shape.rmsEps = d_.rmsEps;
    shape.ropeTheta = d_.ropeTheta;
    shape.ropeScaling = {d_.ropeScaling.factor, d_.ropeScaling.lowFreqFactor,
                         d_.ropeScaling.highFreqFactor,
                         double(d_.ropeScaling.originalMaxPosition)};
    shape.qkNorm = d_.qkNorm;
    shape.storage = storage;
    return shape;
  }

  static loom::oracle::Storage storageOf(int32_t elem) {
    switch (elem) {
    case LOOM_ELEM_BF16:
      return loom::oracle::Storage::BF16;
    case LOOM_ELEM_F16:
      return loom::oracle::Storage::F16;
    case LOOM_ELEM_F32:
      return loom::oracle::Storage::F32;
    }
    fail("decoder: activations of element type " + std::string(elemName(elem)) +
         " have no oracle storage type");
  }

  /// Reads copy l of weight wi back into staging_ and compares its chunk
  /// hashes with what was uploaded there.
  void verifySlice(size_t wi, int64_t l, WeightCheck &check) {
    const WeightDef &w = weights_[wi];
    const int64_t n = w.numel();
    const size_t es = elemSize(act_);
    // staging_ keeps its memory from slice to slice: fresh gigabyte
    // allocations cost more than the oracle.
    staging_.elem = act_;
    staging_.dims = {n};
    staging_.bytes.resize(size_t(n) * es);
    s_.device().copy(staging_.data(),
                     static_cast<const char *>(s_.ptr(w.name)) +
                         size_t(l * n) * es,
                     size_t(n) * es);
    const Slice &slice = slices_[wi][size_t(l)];
    const std::vector<uint64_t> &want =
        slice.zero ? zeroHashes_.at(w.name) : slice.hashes;
    std::vector<uint64_t> got = chunkHashes(staging_.data(), n, es);
    int64_t bad = 0;
    for (size_t c = 0; c < got.size(); ++c)
      bad += got[c] != want[c];
    if (bad)
      check.where += (check.where.empty() ? "" : ", ") + w.name +
                     (w.stacked ? " layer " + std::to_string(l) : "") + " (" +
                     std::to_string(bad) + ")";
    check.changed += bad;
  }

  /// Reads back and verifies layer l's weights and widens into `w` (double,
  /// reusing its memory) what the oracle needs: the whole layer when it is
  /// active, the K/V path otherwise. `all`: also verify the slices the
  /// oracle does not read (an inactive layer's other weights).
  void readLayer(int64_t l, bool active, bool all,
                 loom::oracle::LayerWeights &w, WeightCheck &check) {
    for (size_t wi = 0; wi < weights_.size(); ++wi) {
      const WeightDef &def = weights_[wi];
      if (!def.stacked)
        continue;
      Vec *out = field(w, def.name);
      if (!out)
        fail("internal: no oracle field for weight '" + def.name + "'");
      const bool needed = active || def.kvPath();
      if (!needed && !all)
        continue;
      verifySlice(wi, l, check);
      if (needed)
        widenAll(staging_, *out);
    }
  }

  /// out = all of t in double, on all cores (out keeps its memory).
  static void widenAll(const HostTensor &t, Vec &out) {
    const int64_t n = t.numel();
    out.resize(size_t(n));
    loom::oracle::parallelFor((n + kDrawChunk - 1) / kDrawChunk, [&](int64_t c) {
      widen(t, c * kDrawChunk, std::min(n, (c + 1) * kDrawChunk), out.data());
    });
  }

  /// out[i] = t[i] for i in [begin, end): bf16 (the usual weights) decoded
  /// inline, the hundreds of millions of weights of a layer are too many
  /// for a call per element.
  static void widen(const HostTensor &t, int64_t begin, int64_t end,
                    double *out) {
    if (t.elem != LOOM_ELEM_BF16) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = t.get(i);
      return;
    }
    const auto *bits = reinterpret_cast<const uint16_t *>(t.data());
    for (int64_t i = begin; i < end; ++i) {
      uint32_t u = uint32_t(bits[i]) << 16;
      float f;
      std::memcpy(&f, &u, sizeof f);
      out[i] = f;
    }
  }

  static Vec *field(loom::oracle::LayerWeights &w, const std::string &name) {
    if (name == "attn_norm") return &w.attnNorm;
    if (name == "w_q") return &w.wq;
    if (name == "w_k") return &w.wk;
    if (name == "w_v") return &w.wv;
    if (name == "w_o") return &w.wo;
    if (name == "q_norm") return &w.qNorm;
    if (name == "k_norm") return &w.kNorm;
    if (name == "ffn_norm") return &w.ffnNorm;
    if (name == "w_gate") return &w.wGate;
    if (name == "w_up") return &w.wUp;
    if (name == "w_down") return &w.wDown;
    return nullptr;
  }

  void readPages(const std::string &name, int64_t l, HostTensor &out) {
    const size_t es = elemSize(act_);
    for (int64_t k = 0; k < nnz_; ++k) {
      size_t src = size_t((l * d_.maxPages + table_.indices[size_t(k)]) *
                          pageElems_) * es;
      s_.device().copy(static_cast<char *>(out.data()) + size_t(k * pageElems_) * es,
                       static_cast<const char *>(s_.ptr(name)) + src,
                       size_t(pageElems_) * es);
    }
  }

  /// next_tokens against the head run on the final hidden `x` of the
  /// reference with activation storage `storage` (storage-faithful: the
  /// normed hidden rounded to it and the logits to f32, as decoderWithHead).
  void verifyHead(CheckSet &checks, const Vec &x,
                  loom::oracle::Storage storage) {
    const int64_t hid = d_.hidden, V = d_.vocab;
    const size_t es = elemSize(act_);
    Vec finalNorm = s_.download("final_norm", act_, {hid}).toDoubles();
    Vec hf = loom::oracle::rmsnorm(x, finalNorm, hid, d_.rmsEps);
    loom::oracle::roundAll(hf, storage);
    Vec logits(size_t(B_ * V));
    for (int64_t v0 = 0; v0 < V; v0 += kVocabChunk) {
      int64_t n = std::min(kVocabChunk, V - v0);
      Vec w = s_.download("lm_head", act_, {n, hid}, size_t(v0 * hid) * es)
                  .toDoubles();
      Vec part = loom::oracle::linear(hf, w, B_, hid, n);
      loom::oracle::roundAll(part, storage == loom::oracle::Storage::Exact
                                       ? storage
                                       : loom::oracle::Storage::F32);
      for (int64_t b = 0; b < B_; ++b)
        std::copy(part.begin() + b * n, part.begin() + (b + 1) * n,
                  logits.begin() + b * V + v0);
    }
    IVec ref = loom::oracle::argmax(logits, V);
    HostTensor got = s_.download("next_tokens", LOOM_ELEM_I32, {B_});

    int64_t clearMismatch = 0, nearTie = 0, match = 0, clearMargin = 0;
    std::string notes;
    for (int64_t b = 0; b < B_; ++b) {
      const double *row = logits.data() + b * V;
      double ss = 0, second = -std::numeric_limits<double>::infinity();
      for (int64_t v = 0; v < V; ++v) {
        ss += row[v] * row[v];
        if (v != ref[size_t(b)])
          second = std::max(second, row[v]);
      }
      double tol = kLogitGapTol * std::sqrt(ss / double(V));
      clearMargin += row[ref[size_t(b)]] - second > tol;
      int64_t t = int64_t(got.get(b));
      if (t == ref[size_t(b)]) {
        ++match;
        continue;
      }
      std::ostringstream os;
      os << "request " << b << ": token " << t << ", oracle " << ref[size_t(b)];
      if (t < 0 || t >= V) {
        ++clearMismatch;
        os << " (out of range)";
      } else {
        double gap = row[ref[size_t(b)]] - row[t];
        bool clear = gap > tol;
        clear ? ++clearMismatch : ++nearTie;
        os << ", oracle logit gap " << formatNumber(gap) << " vs tolerance "
           << formatNumber(tol) << (clear ? " (clear mismatch)" : " (near-tie)");
      }
      notes += (notes.empty() ? "" : "; ") + os.str();
    }
    std::ostringstream summary;
    summary << match << "/" << B_ << " equal, " << nearTie
            << " near-tie(s) differ (ok), " << clearMargin
            << " request(s) with a clear top-2 margin";
    if (!notes.empty())
      summary << "; " << notes;
    checks.add("next_tokens", "clear argmax mismatches", 0,
               double(clearMismatch), summary.str());
  }

  Session &s_;
  loom::spec::DecoderSpec d_;
  int32_t act_;
  std::vector<WeightDef> weights_;
  std::vector<int64_t> lens_;
  int64_t B_ = 0, nnz_ = 0, pageElems_ = 0;
  PageTable table_;
  std::vector<int64_t> newPage_, newSlot_;
  std::vector<HostTensor> kStaged_, vStaged_;
  HostTensor hidden_, tokens_;
  HostTensor staging_; ///< verifySlice's copy of one slice, storage type
  /// One layer's weights in double for the oracle, reused layer after layer
  /// and launch after launch (~1.75 GB for an 8B model's layer).
  loom::oracle::LayerWeights layerWeights_;
  loom::oracle::LayerCache layerCache_; ///< one layer's compacted pages
  std::vector<std::vector<Slice>> slices_;    ///< [weight][copy]
  std::map<std::string, std::vector<uint64_t>> zeroHashes_; ///< w_o, w_down
  bool isolate_ = false, benchAfter_ = false;
  int launches_ = 0;
  std::vector<bool> active_; ///< layers whose w_o / w_down are drawn now
};

} // namespace

std::unique_ptr<Family> makeDecoderFamily(Session &session,
                                          const loom::spec::Spec &spec,
                                          const RunOptions &options, Rng &rng) {
  return std::make_unique<DecoderFamily>(
      session, spec, std::get<loom::spec::DecoderSpec>(spec.family), options,
      rng);
}

} // namespace loom::check::detail
