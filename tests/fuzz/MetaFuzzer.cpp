//===- MetaFuzzer.cpp - libFuzzer target of the bodies' meta checks -------===//
//
// Any bytes are the run-time meta values of a small program: kv_indptr,
// kv_indices and kv_lens of a paged cache (MLA decode, GQA decode), the
// slots of kv_append, or KDA's cu_seqlens, with boundary values (-1,
// INT32_MAX, the cache's size) mixed in. Every task of the host bodies runs
// on them (kernels/common/MetaGuard.h checks them where they are read),
// over buffers of exactly their size (ASan and UBSan see any stray access).
// The rules are written again here, independently: a fault must be recorded
// exactly when the values break one of them, and a refused slot must leave
// the caches untouched. Inputs that once broke it are kept in meta-corpus/.
//
//===----------------------------------------------------------------------===//

#include "kernels/host/DecoderBodies.h"
#include "kernels/host/KdaBodies.h"
#include "kernels/host/MetaFault.h"
#include "kernels/host/MlaBodies.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

using namespace loom;

struct Bytes {
  const uint8_t *data;
  size_t size, at = 0;
  int32_t u8() { return at < size ? data[at++] : 0; }
  /// Mostly small values, now and then a boundary one.
  int32_t value(int32_t limit) {
    switch (const int32_t b = u8()) {
    case 250: return -1;
    case 251: return INT32_MAX;
    case 252: return INT32_MIN;
    case 253: return limit;
    default: return b % (limit + 3) - 1;
    }
  }
};

constexpr int64_t kPages = 6, kP = 4, kMaxBatch = 4;

void require(bool ok) {
  if (!ok)
    std::abort(); // libFuzzer reports it with the input
}

bool recorded() { return host::metaFaultRecord().reason != 0; }

/// The paged rules, spelled out: request b reads ids [indptr[b],
/// indptr[b] + ceil(len / P)) and they must lie in [0, kPages).
bool pagedValid(const std::vector<int32_t> &indptr,
                const std::vector<int32_t> &indices,
                const std::vector<int32_t> &lens, int64_t batch) {
  const int64_t nnz = int64_t(indices.size());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t first = indptr[b], end = indptr[b + 1], len = lens[b];
    if (first < 0 || first > nnz || end < first || end > nnz)
      return false;
    if (len < 0 || len > (end - first) * kP)
      return false;
    for (int64_t i = first; i < first + (len + kP - 1) / kP; ++i)
      if (indices[i] < 0 || indices[i] >= kPages)
        return false;
  }
  return true;
}

void fuzzMla(Bytes &in, const std::vector<int32_t> &indptr,
             const std::vector<int32_t> &indices,
             const std::vector<int32_t> &lens, int64_t batch) {
  constexpr int64_t H = 2, Dc = 8, Dp = 4, kSlots = 3, kMerges = 2;
  std::vector<float> qn(batch * H * Dc, 0.5f), qp(batch * H * Dp, 0.5f);
  std::vector<float> ckv(kPages * kP * Dc, 0.25f), kpe(kPages * kP * Dp, 0.25f);
  std::vector<float> o(batch * H * Dc), lse(batch * H);
  std::vector<float> ws(mlaWorkspaceFloats(kSlots, batch, H, Dc));
  host::MlaParams<float> p;
  p.qNope = qn.data();
  p.qPe = qp.data();
  p.ckvCache = ckv.data();
  p.kpeCache = kpe.data();
  p.kvIndptr = indptr.data();
  p.kvIndices = indices.data();
  p.kvLens = lens.data();
  p.o = o.data();
  p.lse = lse.data();
  p.batch = batch;
  p.numHeads = H;
  p.dimCkv = Dc;
  p.dimKpe = Dp;
  p.pageSize = kP;
  p.numPages = kPages;
  p.numIndices = int64_t(indices.size());
  p.smScale = 0.5f;
  const int64_t minSlotTokens = 1 + in.u8() % 8;
  float *partialO = ws.data();
  float *partialLse = ws.data() + mlaPartialOFloats(kSlots, batch, H, Dc);
  host::metaFaultRecord() = LoomMetaFault{};
  for (int64_t s = 0; s < kSlots; ++s)
    host::mlaSplit(p, s, kSlots, partialO, partialLse, minSlotTokens);
  for (int64_t m = 0; m < kMerges; ++m)
    host::mlaMerge(p, m, kMerges, kSlots, partialO, partialLse, minSlotTokens);
  require(recorded() == !pagedValid(indptr, indices, lens, batch));
}

void fuzzGqa(const std::vector<int32_t> &indptr,
             const std::vector<int32_t> &indices,
             const std::vector<int32_t> &lens, int64_t batch) {
  constexpr int64_t Hq = 2, Hkv = 1, D = 4, S = 2;
  std::vector<float> q(kMaxBatch * Hq * D, 1.f);
  std::vector<float> kc(kPages * kP * Hkv * D, 0.5f), vc(kc.size(), 0.25f);
  std::vector<float> ws(host::gqaWorkspaceFloats(kMaxBatch, S, Hq, D));
  host::metaFaultRecord() = LoomMetaFault{};
  for (int64_t n = 0; n < kMaxBatch * Hkv * S; ++n)
    host::gqaDecodeSplit(q.data(), kc.data(), vc.data(), indptr.data(),
                         indices.data(), lens.data(), ws.data(), batch,
                         kMaxBatch, Hq, Hkv, D, D, kP, kPages,
                         int64_t(indices.size()), S, 0.5f, n / (Hkv * S),
                         n / S % Hkv, n % S);
  require(recorded() == !pagedValid(indptr, indices, lens, batch));
}

void fuzzKvAppend(Bytes &in) {
  constexpr int64_t Hkv = 1, D = 2, rows = kPages * kP;
  const int64_t tokens = 1 + in.u8() % 6;
  std::vector<int32_t> slots(tokens);
  bool valid = true;
  for (int32_t &s : slots) {
    s = in.value(int32_t(rows));
    valid = valid && s < rows;
  }
  std::vector<float> k(tokens * D, 1.f), v(tokens * D, 2.f);
  std::vector<float> kc(rows * D, NAN), vc(rows * D, NAN);
  host::metaFaultRecord() = LoomMetaFault{};
  host::kvAppend(k.data(), v.data(), slots.data(), kc.data(), vc.data(), Hkv,
                 D, D, kP, kPages, 0, tokens);
  require(recorded() == !valid);
  // Exactly the rows of valid slots are written.
  for (int64_t r = 0; r < rows; ++r) {
    bool named = false;
    for (int32_t s : slots)
      named = named || s == r;
    require(std::isnan(kc[r * D]) == !named);
  }
}

void fuzzKda(Bytes &in) {
  const int64_t n = 1 + in.u8() % 5, C = 4, T = 12, maxChunks = 5;
  std::vector<int32_t> cu(n + 1);
  for (int32_t &x : cu)
    x = in.value(int32_t(T));
  bool valid = cu[0] >= 0 && cu[n] <= T;
  int64_t chunks = 0;
  for (int64_t i = 0; i < n && valid; ++i) {
    valid = cu[i + 1] >= cu[i];
    chunks += (int64_t(cu[i + 1]) - cu[i] + C - 1) / C;
  }
  valid = valid && chunks <= maxChunks;
  host::metaFaultRecord() = LoomMetaFault{};
  const int64_t got = kda::kdaCheckedChunks(cu.data(), n, C, T, maxChunks);
  require(recorded() == !valid);
  require(valid ? got == chunks : got == -1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Bytes in{data, size};
  const int32_t which = in.u8() % 4;
  if (which == 2) {
    fuzzKvAppend(in);
    return 0;
  }
  if (which == 3) {
    fuzzKda(in);
    return 0;
  }
  const int64_t batch = 1 + in.u8() % kMaxBatch;
  std::vector<int32_t> indices(in.u8() % 10);
  for (int32_t &x : indices)
    x = in.value(int32_t(kPages));
  std::vector<int32_t> indptr(batch + 1), lens(batch);
  for (int32_t &x : indptr)
    x = in.value(int32_t(indices.size()));
  for (int32_t &x : lens)
    x = in.value(int32_t(3 * kP));
  if (which == 0)
    fuzzMla(in, indptr, indices, lens, batch);
  else
    fuzzGqa(indptr, indices, lens, batch);
  return 0;
}
