//===- CheckUtil.h - Inputs, page tables and metrics of LoomCheck -*- C++ -*-===//
//
// The pieces of LoomCheck that need no device: a fast seeded generator,
// host tensors in a storage type (bf16/f16/f32/i32), page tables with
// scattered and consecutive page ids, and the comparison metrics. Separate
// from Check.cpp so tests/unit/CheckTest.cpp can check that the metrics do
// fail (NaN, a perturbation, drift) and that the page tables are what the
// checks claim.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_TOOLS_CHECK_CHECKUTIL_H
#define LOOM_TOOLS_CHECK_CHECKUTIL_H

#include "tools/check/Check.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::check::detail {

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

/// xoshiro256** seeded through splitmix64: fast enough to draw the hundreds
/// of millions of weights of a decoder layer on a small CPU.
class Rng {
public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();                      ///< [0, 1)
  double uniform(double lo, double hi);  ///< [lo, hi)
  double normal(double mean = 0, double stddev = 1); ///< Box-Muller
  int64_t index(int64_t n);              ///< uniform in [0, n), n > 0
  /// A generator for a sub-stream (e.g. one launch), independent of this.
  Rng fork(uint64_t salt);

private:
  uint64_t s_[4];
  double spare_ = 0;
  bool hasSpare_ = false;
};

/// A fresh seed from std::random_device (never 0).
uint64_t randomSeed();

//===----------------------------------------------------------------------===//
// Host tensors in a storage type
//===----------------------------------------------------------------------===//

/// Bytes of one element of a LoomElem (0 if unknown).
size_t elemSize(int32_t elem);
const char *elemName(int32_t elem);

/// A row-major host array of one LoomElem type.
struct HostTensor {
  int32_t elem = 2; // LOOM_ELEM_F32
  std::vector<int64_t> dims;
  std::vector<unsigned char> bytes;

  HostTensor() = default;
  HostTensor(int32_t elem, std::vector<int64_t> dims);
  int64_t numel() const;
  size_t sizeBytes() const { return bytes.size(); }
  void *data() { return bytes.data(); }
  const void *data() const { return bytes.data(); }

  /// Element i as a double (floats widened, ints converted).
  double get(int64_t i) const;
  /// Stores v rounded to the storage type (round to nearest even).
  void set(int64_t i, double v);
  /// The raw bit pattern of element i (for bitwise comparisons).
  uint32_t bits(int64_t i) const;
  void setBits(int64_t i, uint32_t bits);

  std::vector<float> toFloats() const;
  std::vector<double> toDoubles() const;
  std::vector<double> toDoubles(int64_t begin, int64_t count) const;
};

/// The NaN bit pattern outputs are poisoned with: bf16 0x7fc0, f16 0x7e00,
/// f32 0x7fc00000; i32/i64 -1 (never a valid token or index).
uint32_t poisonBits(int32_t elem);
/// A buffer of `count` elements holding the poison pattern.
HostTensor poisonTensor(int32_t elem, int64_t count);
/// Whether element i of t has exactly the poison pattern.
bool isPoison(const HostTensor &t, int64_t i);

/// Fills t with draws of `draw()` (rounded to the storage type); draws are
/// redrawn while they round to zero, so no input is zero.
template <typename Draw> void fillNonZero(HostTensor &t, Draw draw) {
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    for (int tries = 0;; ++tries) {
      t.set(i, draw());
      if (t.get(i) != 0.0 || tries > 16)
        break;
    }
  }
}

//===----------------------------------------------------------------------===//
// Page tables
//===----------------------------------------------------------------------===//

/// A paged page table: request b owns page ids indices[indptr[b] ..
/// indptr[b+1]) (ceil(lens[b] / pageSize) of them, none for an empty one)
/// and holds lens[b] tokens. Page ids are distinct across all requests.
struct PageTable {
  std::vector<int32_t> indptr, indices, lens;
  int64_t pageSize = 1;
  int64_t batch() const { return int64_t(lens.size()); }
  int64_t numPages() const { return int64_t(indices.size()); }
  /// Valid token slots of the k-th page (global index into indices).
  int64_t validSlots(int64_t k) const;
  /// Request owning the k-th page.
  int64_t requestOf(int64_t k) const;
};

/// Draws a page table for `lens` over a pool of `maxPages` pages. After the
/// first page, each page id is with probability `consecutive` the previous
/// id + 1 (when that is free and in the pool), otherwise a uniformly drawn
/// free id anywhere in the pool, so about that fraction of neighbouring ids
/// are consecutive and the rest are scattered. Throws std::runtime_error
/// when the pool cannot hold the requests or an id does not fit int32.
PageTable makePageTable(const std::vector<int64_t> &lens, int64_t pageSize,
                        int64_t maxPages, Rng &rng, double consecutive = 0.5);

/// Fraction of neighbouring page ids (within a request) that are consecutive.
double consecutiveFraction(const PageTable &table);

/// Up to `count` distinct pool pages that the table does not use, the
/// neighbours of used pages first (page after a request's last page, page
/// before its first), then random ones. Meant to hold NaN: a kernel that
/// reads past a request's pages reads NaN.
std::vector<int64_t> pickUnusedPages(const PageTable &table, int64_t maxPages,
                                     int64_t count, Rng &rng);

//===----------------------------------------------------------------------===//
// Metrics. All of them treat a NaN or inf in `got` where `ref` is finite as
// an infinite error, so a broken output can never pass.
//===----------------------------------------------------------------------===//

struct ScaledError {
  double worst = 0;       ///< max_i |got-ref| / (atol + rtol |ref|)
  int64_t worstIndex = -1;
  int64_t nonFinite = 0;  ///< elements where got is NaN/inf and ref is not
  int64_t count = 0;      ///< elements compared
};

/// Elementwise |got - ref| <= atol + rtol |ref|, as the worst ratio (passes
/// when <= 1). A reference of +-inf needs exactly that value in got.
ScaledError maxScaledError(const double *got, const double *ref, int64_t n,
                           double atol, double rtol);

/// ||got - ref|| / ||ref|| (2-norms); inf when got has a non-finite value,
/// and when ref is all zeros but got is not. 0 for n == 0.
double relRmsError(const double *got, const double *ref, int64_t n);

/// The worst relRmsError over row ranges [begin, end) of rows of `rowSize`
/// elements; `worstRange` gets the index of the worst range (-1 if none).
double worstRangeRelRms(const double *got, const double *ref, int64_t rowSize,
                        const std::vector<std::pair<int64_t, int64_t>> &ranges,
                        int64_t *worstRange = nullptr);

/// Row ranges of consecutive windows of `window` rows over [0, rows).
std::vector<std::pair<int64_t, int64_t>> windows(int64_t rows, int64_t window);

/// Median (of a copy); 0 for an empty vector.
double median(std::vector<double> values);

//===----------------------------------------------------------------------===//
// Collecting checks over launches
//===----------------------------------------------------------------------===//

/// Gathers one value per (check, launch) and keeps the worst per check;
/// NaN counts as worse than anything.
class CheckSet {
public:
  /// Records `error` of check `name` for the current launch.
  void add(const std::string &name, const std::string &metric, double bound,
           double error, const std::string &note = "");
  /// A failure with no number (e.g. a launch that failed).
  void fail(const std::string &name, const std::string &message);
  std::vector<Check> checks() const;
  bool ok() const;
  /// One line per check: name, metric, worst, bound, per-launch values.
  std::string table() const;

private:
  struct Entry {
    Check check;
    std::vector<double> perLaunch;
    std::vector<std::string> notes;
  };
  std::vector<Entry> entries_;
};

/// "x.xxe-yy" / "inf" / "nan".
std::string formatNumber(double value);
/// "0,1,37".
std::string joinInts(const std::vector<int64_t> &values, size_t maxShown = 16);

} // namespace loom::check::detail

#endif // LOOM_TOOLS_CHECK_CHECKUTIL_H
