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
// The oracle (tools/oracle/DecoderOracle) runs layer by layer with the
// weights read back from the device (one layer in double at a time) over a
// compacted copy of the used cache pages.
//
// Checks:
//  * hidden_out: ||d|| / ||ref|| <= 1e-2 (DESIGN.md; bf16 storage drifts by
//    a few 1e-3 per layer on random stacks, so this holds for a few layers);
//  * k_cache / v_cache new rows (the new token's K after RoPE, and V, of
//    every layer): worst layer's ||d|| / ||ref|| <= 1e-2;
//  * cache rows kept: every other element of the used pages (older tokens,
//    NaN tails) is bit-identical to what was written (count, bound 0);
//  * next_tokens (head): equals the oracle's argmax wherever the oracle's
//    logit gap between its choice and the kernel's exceeds 5% of the row's
//    logit RMS (a clear mismatch fails; near-ties that differ are counted
//    and reported but pass); a token outside [0, vocab) always fails.
//
//===----------------------------------------------------------------------===//
#include "tools/check/CheckInternal.h"

#include "tools/oracle/DecoderOracle.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace loom::check::detail {
namespace {

using loom::oracle::IVec;
using loom::oracle::Vec;

constexpr double kHiddenRel = 1e-2;
constexpr double kCacheRel = 1e-2;
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
};

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

    // Weights: drawn once, a layer slice at a time.
    for (const WeightDef &w : weights_) {
      int64_t slice = 1;
      for (int64_t x : w.dims)
        slice *= x;
      int64_t copies = w.stacked ? L : 1;
      s.allocate(w.name, size_t(copies * slice) * es);
      for (int64_t l = 0; l < copies; ++l) {
        HostTensor t(act_, w.dims);
        if (w.fanIn == 0)
          fillNonZero(t, [&] { return rng.uniform(0.8, 1.2); });
        else {
          double a = w.fanIn < 0 ? std::sqrt(3.0) : std::sqrt(3.0 / double(w.fanIn));
          fillNonZero(t, [&] { return rng.uniform(-a, a); });
        }
        s.upload(w.name, t, size_t(l * slice) * es);
      }
      s.expectUnchangedHash(w.name, 0, size_t(copies * slice) * es);
    }
  }

  std::string sizes() const override {
    std::ostringstream os;
    os << d_.layers << " layer(s), batch " << B_ << ", kv_lens (with the new "
       << "token) " << joinInts(lens_) << ", " << nnz_ << " pages of "
       << d_.pageSize << " per layer (pool " << d_.maxPages << ")"
       << (d_.head ? ", with head (vocab " + std::to_string(d_.vocab) + ")"
                   : "");
    return os.str();
  }

  void prepare(Rng &rng, int) override {
    const int64_t L = d_.layers, hid = d_.hidden, P = d_.pageSize;
    const size_t es = elemSize(act_);
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
        for (int64_t k = 0; k < nnz_; ++k) {
          int64_t valid = table_.validSlots(k);
          int64_t b = table_.requestOf(k);
          for (int64_t slot = 0; slot < P; ++slot) {
            bool isNew = newPage_[size_t(b)] == k && newSlot_[size_t(b)] == slot;
            for (int64_t e = 0; e < rowElems; ++e) {
              int64_t i = k * pageElems_ + slot * rowElems + e;
              if (slot < valid && !isNew) {
                t->set(i, rng.normal());
                if (t->get(i) == 0)
                  t->set(i, 0.5);
              } else {
                t->set(i, nan);
              }
            }
          }
        }
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

  void verify(CheckSet &checks, int) override {
    const int64_t L = d_.layers, hid = d_.hidden, P = d_.pageSize;
    const int64_t rowElems = pageElems_ / P;

    loom::oracle::DecoderShape shape;
    shape.hidden = hid;
    shape.qHeads = d_.numQHeads;
    shape.kvHeads = d_.numKvHeads;
    shape.headDim = d_.headDim;
    shape.ffn = d_.ffn;
    shape.pageSize = P;
    shape.rmsEps = d_.rmsEps;
    shape.ropeTheta = d_.ropeTheta;
    shape.qkNorm = d_.qkNorm;

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

    double worstK = 0, worstV = 0;
    int64_t worstKLayer = 0, worstVLayer = 0, changed = 0;
    std::string perLayerK, perLayerV, changedWhere;
    for (int64_t l = 0; l < L; ++l) {
      loom::oracle::LayerWeights w;
      w.attnNorm = layerSlice("attn_norm", l);
      w.wq = layerSlice("w_q", l);
      w.wk = layerSlice("w_k", l);
      w.wv = layerSlice("w_v", l);
      w.wo = layerSlice("w_o", l);
      if (d_.qkNorm) {
        w.qNorm = layerSlice("q_norm", l);
        w.kNorm = layerSlice("k_norm", l);
      }
      w.ffnNorm = layerSlice("ffn_norm", l);
      w.wGate = layerSlice("w_gate", l);
      w.wUp = layerSlice("w_up", l);
      w.wDown = layerSlice("w_down", l);
      loom::oracle::LayerCache cache;
      cache.k = kStaged_[size_t(l)].toDoubles();
      cache.v = vStaged_[size_t(l)].toDoubles();
      x = loom::oracle::decoderLayer(shape, w, x, meta, cache);
      w = loom::oracle::LayerWeights();

      // The device's cache pages of this layer, compacted the same way.
      HostTensor gotK(act_, {nnz_, pageElems_}), gotV(act_, {nnz_, pageElems_});
      readPages("k_cache", l, gotK);
      readPages("v_cache", l, gotV);
      Vec newGotK, newRefK, newGotV, newRefV;
      int64_t changedHere = 0;
      for (int64_t k = 0; k < nnz_; ++k) {
        int64_t b = table_.requestOf(k);
        for (int64_t slot = 0; slot < P; ++slot) {
          bool isNew = newPage_[size_t(b)] == k && newSlot_[size_t(b)] == slot;
          for (int64_t e = 0; e < rowElems; ++e) {
            int64_t i = k * pageElems_ + slot * rowElems + e;
            if (isNew) {
              newGotK.push_back(gotK.get(i));
              newRefK.push_back(cache.k[size_t(i)]);
              newGotV.push_back(gotV.get(i));
              newRefV.push_back(cache.v[size_t(i)]);
            } else {
              changedHere += gotK.bits(i) != kStaged_[size_t(l)].bits(i);
              changedHere += gotV.bits(i) != vStaged_[size_t(l)].bits(i);
            }
          }
        }
      }
      double ek = relRmsError(newGotK.data(), newRefK.data(), int64_t(newGotK.size()));
      double ev = relRmsError(newGotV.data(), newRefV.data(), int64_t(newGotV.size()));
      perLayerK += (l ? " " : "") + formatNumber(ek);
      perLayerV += (l ? " " : "") + formatNumber(ev);
      if (l == 0 || !(ek <= worstK)) {
        worstK = ek;
        worstKLayer = l;
      }
      if (l == 0 || !(ev <= worstV)) {
        worstV = ev;
        worstVLayer = l;
      }
      if (changedHere)
        changedWhere += (changedWhere.empty() ? "layer " : ", layer ") +
                        std::to_string(l) + ": " + std::to_string(changedHere);
      changed += changedHere;
    }
    checks.add("k_cache new rows", "worst layer ||d||/||ref||", kCacheRel,
               worstK,
               "worst layer " + std::to_string(worstKLayer) +
                   (L > 1 ? "; per layer " + perLayerK : ""));
    checks.add("v_cache new rows", "worst layer ||d||/||ref||", kCacheRel,
               worstV,
               "worst layer " + std::to_string(worstVLayer) +
                   (L > 1 ? "; per layer " + perLayerV : ""));
    checks.add("cache rows kept", "elements changed", 0, double(changed),
               changed ? "older tokens or NaN tails overwritten: " + changedWhere
                       : "");

    if (!d_.head) {
      HostTensor out = s_.download("hidden_out", act_, {B_, hid});
      Vec got = out.toDoubles();
      double err = relRmsError(got.data(), x.data(), int64_t(got.size()));
      // Per request too, in the note: a wrong request shows up here.
      std::string per;
      for (int64_t b = 0; b < B_; ++b)
        per += (b ? " " : "") +
               formatNumber(relRmsError(got.data() + b * hid, x.data() + b * hid, hid));
      checks.add("hidden_out", "||d||/||ref||", kHiddenRel, err,
                 "per request " + per);
      return;
    }
    verifyHead(checks, x);
  }

private:
  /// Layer l's slice of a stacked weight, read back from the device.
  Vec layerSlice(const std::string &name, int64_t l) {
    for (const WeightDef &w : weights_)
      if (w.name == name) {
        int64_t slice = 1;
        for (int64_t x : w.dims)
          slice *= x;
        return s_.download(name, act_, w.dims, size_t(l * slice) * elemSize(act_))
            .toDoubles();
      }
    fail("internal: no weight '" + name + "'");
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

  void verifyHead(CheckSet &checks, const Vec &x) {
    const int64_t hid = d_.hidden, V = d_.vocab;
    const size_t es = elemSize(act_);
    Vec finalNorm = s_.download("final_norm", act_, {hid}).toDoubles();
    Vec hf = loom::oracle::rmsnorm(x, finalNorm, hid, d_.rmsEps);
    Vec logits(size_t(B_ * V));
    for (int64_t v0 = 0; v0 < V; v0 += kVocabChunk) {
      int64_t n = std::min(kVocabChunk, V - v0);
      Vec w = s_.download("lm_head", act_, {n, hid}, size_t(v0 * hid) * es)
                  .toDoubles();
      Vec part = loom::oracle::linear(hf, w, B_, hid, n);
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
