//===- CheckUtil.cpp - Inputs, page tables and metrics of LoomCheck -------===//
#include "tools/check/CheckUtil.h"

#include "kernels/common/Numerics.h"
#include "kernels/common/ProgramAbi.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

namespace loom::check::detail {

//===----------------------------------------------------------------------===//
// Rng
//===----------------------------------------------------------------------===//

namespace {
uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
} // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t &s : s_)
    s = splitmix64(x);
}

uint64_t Rng::next() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

double Rng::normal(double mean, double stddev) {
  if (hasSpare_) {
    hasSpare_ = false;
    return mean + stddev * spare_;
  }
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300)
    u1 = 1e-300;
  double r = std::sqrt(-2.0 * std::log(u1));
  double a = 6.283185307179586 * u2;
  spare_ = r * std::sin(a);
  hasSpare_ = true;
  return mean + stddev * r * std::cos(a);
}

int64_t Rng::index(int64_t n) {
  if (n <= 0)
    throw std::logic_error("Rng::index: n must be > 0");
  return int64_t(
      (static_cast<unsigned __int128>(next()) * uint64_t(n)) >> 64);
}

Rng Rng::fork(uint64_t salt) {
  uint64_t x = next() ^ (salt * 0xd1342543de82ef95ull);
  return Rng(splitmix64(x));
}

uint64_t randomSeed() {
  std::random_device rd;
  uint64_t seed = 0;
  while (seed == 0)
    seed = (uint64_t(rd()) << 32) ^ rd();
  return seed;
}

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

size_t elemSize(int32_t elem) {
  switch (elem) {
  case LOOM_ELEM_BF16:
  case LOOM_ELEM_F16:
    return 2;
  case LOOM_ELEM_F32:
  case LOOM_ELEM_I32:
    return 4;
  case LOOM_ELEM_I64:
    return 8;
  }
  return 0;
}

const char *elemName(int32_t elem) {
  switch (elem) {
  case LOOM_ELEM_BF16:
    return "bf16";
  case LOOM_ELEM_F16:
    return "f16";
  case LOOM_ELEM_F32:
    return "f32";
  case LOOM_ELEM_I32:
    return "i32";
  case LOOM_ELEM_I64:
    return "i64";
  }
  return "?";
}

HostTensor::HostTensor(int32_t elem, std::vector<int64_t> dims)
    : elem(elem), dims(std::move(dims)) {
  if (elemSize(elem) == 0)
    throw std::runtime_error("unknown element type " + std::to_string(elem));
  bytes.resize(size_t(numel()) * elemSize(elem));
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

double HostTensor::get(int64_t i) const {
  const unsigned char *p = bytes.data();
  switch (elem) {
  case LOOM_ELEM_BF16:
    return toFloat(reinterpret_cast<const bf16 *>(p)[i]);
  case LOOM_ELEM_F16:
    return toFloat(reinterpret_cast<const f16 *>(p)[i]);
  case LOOM_ELEM_F32:
    return reinterpret_cast<const float *>(p)[i];
  case LOOM_ELEM_I32:
    return reinterpret_cast<const int32_t *>(p)[i];
  case LOOM_ELEM_I64:
    return double(reinterpret_cast<const int64_t *>(p)[i]);
  }
  return 0;
}

void HostTensor::set(int64_t i, double v) {
  unsigned char *p = bytes.data();
  switch (elem) {
  case LOOM_ELEM_BF16:
    reinterpret_cast<bf16 *>(p)[i] = toBf16(float(v));
    return;
  case LOOM_ELEM_F16:
    reinterpret_cast<f16 *>(p)[i] = toF16(float(v));
    return;
  case LOOM_ELEM_F32:
    reinterpret_cast<float *>(p)[i] = float(v);
    return;
  case LOOM_ELEM_I32:
    reinterpret_cast<int32_t *>(p)[i] = int32_t(v);
    return;
  case LOOM_ELEM_I64:
    reinterpret_cast<int64_t *>(p)[i] = int64_t(v);
    return;
  }
}

uint32_t HostTensor::bits(int64_t i) const {
  size_t es = elemSize(elem);
  uint64_t b = 0;
  std::memcpy(&b, bytes.data() + size_t(i) * es, es);
  return uint32_t(b);
}

void HostTensor::setBits(int64_t i, uint32_t b) {
  size_t es = elemSize(elem);
  uint64_t wide = b;
  if (es == 8 && int32_t(b) < 0)
    wide |= 0xffffffff00000000ull; // sign-extend (-1 stays -1)
  std::memcpy(bytes.data() + size_t(i) * es, &wide, es);
}

namespace {
/// Widens `count` elements from `begin` (typed loops: these run over
/// hundreds of millions of weights).
template <typename Out>
void widen(const HostTensor &t, int64_t begin, int64_t count, Out *out) {
  const unsigned char *p = t.bytes.data();
  switch (t.elem) {
  case LOOM_ELEM_BF16: {
    auto *src = reinterpret_cast<const uint16_t *>(p) + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = Out(bitsFloat(uint32_t(src[i]) << 16));
    return;
  }
  case LOOM_ELEM_F16: {
    auto *src = reinterpret_cast<const f16 *>(p) + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = Out(toFloat(src[i]));
    return;
  }
  case LOOM_ELEM_F32: {
    auto *src = reinterpret_cast<const float *>(p) + begin;
    for (int64_t i = 0; i < count; ++i)
      out[i] = Out(src[i]);
    return;
  }
  default:
    for (int64_t i = 0; i < count; ++i)
      out[i] = Out(t.get(begin + i));
  }
}
} // namespace

std::vector<float> HostTensor::toFloats() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  widen(*this, 0, numel(), out.data());
  return out;
}

std::vector<double> HostTensor::toDoubles() const {
  return toDoubles(0, numel());
}

std::vector<double> HostTensor::toDoubles(int64_t begin, int64_t count) const {
  std::vector<double> out(static_cast<size_t>(count));
  widen(*this, begin, count, out.data());
  return out;
}

uint32_t poisonBits(int32_t elem) {
  switch (elem) {
  case LOOM_ELEM_BF16:
    return 0x7fc0u;
  case LOOM_ELEM_F16:
    return 0x7e00u;
  case LOOM_ELEM_F32:
    return 0x7fc00000u;
  default:
    return 0xffffffffu; // -1
  }
}

HostTensor poisonTensor(int32_t elem, int64_t count) {
  HostTensor t(elem, {count});
  uint32_t b = poisonBits(elem);
  for (int64_t i = 0; i < count; ++i)
    t.setBits(i, b);
  return t;
}

bool isPoison(const HostTensor &t, int64_t i) {
  return t.bits(i) == poisonBits(t.elem);
}

//===----------------------------------------------------------------------===//
// Page tables
//===----------------------------------------------------------------------===//

int64_t PageTable::requestOf(int64_t k) const {
  auto it = std::upper_bound(indptr.begin(), indptr.end(), int32_t(k));
  return int64_t(it - indptr.begin()) - 1;
}

int64_t PageTable::validSlots(int64_t k) const {
  int64_t b = requestOf(k);
  int64_t first = indptr[b];
  int64_t valid = int64_t(lens[b]) - (k - first) * pageSize;
  return std::max<int64_t>(0, std::min<int64_t>(pageSize, valid));
}

PageTable makePageTable(const std::vector<int64_t> &lens, int64_t pageSize,
                        int64_t maxPages, Rng &rng, double consecutive) {
  if (pageSize <= 0 || maxPages <= 0)
    throw std::runtime_error("page table: page size and pool must be > 0");
  PageTable t;
  t.pageSize = pageSize;
  int64_t total = 0;
  t.indptr.push_back(0);
  for (int64_t len : lens) {
    if (len < 0)
      throw std::runtime_error("page table: negative length " +
                               std::to_string(len));
    if (len > std::numeric_limits<int32_t>::max())
      throw std::runtime_error("page table: length " + std::to_string(len) +
                               " does not fit int32");
    total += (len + pageSize - 1) / pageSize;
    if (total > maxPages)
      throw std::runtime_error(
          "page table: the requests need more pages than the pool of " +
          std::to_string(maxPages) + " pages (page size " +
          std::to_string(pageSize) + ", lengths " + joinInts(lens) + ")");
    t.indptr.push_back(int32_t(total));
    t.lens.push_back(int32_t(len));
  }
  if (maxPages - 1 > std::numeric_limits<int32_t>::max())
    throw std::runtime_error("page table: pool does not fit int32 page ids");

  std::unordered_set<int64_t> used;
  used.reserve(size_t(total) * 2);
  // With a crowded pool, rejection sampling gets slow: draw from the free list.
  bool crowded = total * 2 > maxPages;
  std::vector<int64_t> freeList;
  if (crowded) {
    freeList.resize(size_t(maxPages));
    for (int64_t p = 0; p < maxPages; ++p)
      freeList[p] = p;
  }
  auto drawFree = [&]() -> int64_t {
    if (!crowded) {
      for (;;) {
        int64_t p = rng.index(maxPages);
        if (!used.count(p))
          return p;
      }
    }
    for (;;) { // free list holds candidates; used ones are dropped lazily
      int64_t i = rng.index(int64_t(freeList.size()));
      int64_t p = freeList[i];
      freeList[i] = freeList.back();
      freeList.pop_back();
      if (!used.count(p))
        return p;
    }
  };

  int64_t prev = -1;
  t.indices.reserve(size_t(total));
  for (int64_t k = 0; k < total; ++k) {
    int64_t page = -1;
    if (prev >= 0 && prev + 1 < maxPages && !used.count(prev + 1) &&
        rng.uniform() < consecutive)
      page = prev + 1;
    else
      page = drawFree();
    used.insert(page);
    t.indices.push_back(int32_t(page));
    prev = page;
  }
  return t;
}

double consecutiveFraction(const PageTable &table) {
  int64_t pairs = 0, consecutive = 0;
  for (int64_t b = 0; b < table.batch(); ++b)
    for (int64_t k = table.indptr[b] + 1; k < table.indptr[b + 1]; ++k) {
      ++pairs;
      consecutive += table.indices[k] == table.indices[k - 1] + 1;
    }
  return pairs ? double(consecutive) / double(pairs) : 0.0;
}

std::vector<int64_t> pickUnusedPages(const PageTable &table, int64_t maxPages,
                                     int64_t count, Rng &rng) {
  std::unordered_set<int64_t> used(table.indices.begin(), table.indices.end());
  std::unordered_set<int64_t> picked;
  std::vector<int64_t> out;
  auto take = [&](int64_t p) {
    if (int64_t(out.size()) >= count || p < 0 || p >= maxPages ||
        used.count(p) || picked.count(p))
      return;
    picked.insert(p);
    out.push_back(p);
  };
  for (int64_t b = 0; b < table.batch(); ++b) {
    if (table.indptr[b] == table.indptr[b + 1])
      continue;
    take(int64_t(table.indices[table.indptr[b + 1] - 1]) + 1);
    take(int64_t(table.indices[table.indptr[b]]) - 1);
  }
  int64_t freePages = maxPages - int64_t(used.size());
  int64_t want = std::min(count, freePages);
  for (int64_t tries = 0; int64_t(out.size()) < want && tries < 64 * count;
       ++tries)
    take(rng.index(maxPages));
  return out;
}

//===----------------------------------------------------------------------===//
// Metrics
//===----------------------------------------------------------------------===//

ScaledError maxScaledError(const double *got, const double *ref, int64_t n,
                           double atol, double rtol) {
  const double inf = std::numeric_limits<double>::infinity();
  ScaledError e;
  e.count = n;
  for (int64_t i = 0; i < n; ++i) {
    double g = got[i], r = ref[i], ratio;
    if (std::isinf(r))
      ratio = g == r ? 0.0 : inf; // -inf lse of an empty request
    else if (!std::isfinite(r))
      ratio = inf; // the reference itself is broken
    else if (!std::isfinite(g)) {
      ratio = inf;
      ++e.nonFinite;
    } else
      ratio = std::fabs(g - r) / (atol + rtol * std::fabs(r));
    if (e.worstIndex < 0 || ratio > e.worst) {
      e.worst = ratio;
      e.worstIndex = i;
    }
  }
  return e;
}

double relRmsError(const double *got, const double *ref, int64_t n) {
  const double inf = std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref[i]))
      return inf;
    double d = got[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  if (num == 0)
    return 0;
  if (den == 0)
    return inf;
  return std::sqrt(num / den);
}

double worstRangeRelRms(const double *got, const double *ref, int64_t rowSize,
                        const std::vector<std::pair<int64_t, int64_t>> &ranges,
                        int64_t *worstRange) {
  double worst = 0;
  int64_t at = -1;
  for (size_t i = 0; i < ranges.size(); ++i) {
    auto [b, e] = ranges[i];
    double err = relRmsError(got + b * rowSize, ref + b * rowSize,
                             (e - b) * rowSize);
    if (at < 0 || err > worst || std::isnan(err)) {
      worst = err;
      at = int64_t(i);
    }
  }
  if (worstRange)
    *worstRange = at;
  return worst;
}

std::vector<std::pair<int64_t, int64_t>> windows(int64_t rows, int64_t window) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t b = 0; b < rows; b += window)
    out.emplace_back(b, std::min(rows, b + window));
  return out;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

//===----------------------------------------------------------------------===//
// CheckSet
//===----------------------------------------------------------------------===//

namespace {
/// a is worse than b (NaN is the worst).
bool worse(double a, double b) {
  if (std::isnan(a))
    return !std::isnan(b);
  if (std::isnan(b))
    return false;
  return a > b;
}
} // namespace

void CheckSet::add(const std::string &name, const std::string &metric,
                   double bound, double error, const std::string &note) {
  Entry *entry = nullptr;
  for (Entry &e : entries_)
    if (e.check.name == name)
      entry = &e;
  if (!entry) {
    entries_.push_back({});
    entry = &entries_.back();
    entry->check.name = name;
    entry->check.metric = metric;
    entry->check.bound = bound;
    entry->check.error = error;
  } else if (worse(error, entry->check.error)) {
    entry->check.error = error;
  }
  entry->perLaunch.push_back(error);
  if (!note.empty())
    entry->notes.push_back(note);
  entry->check.ok = !std::isnan(entry->check.error) &&
                    entry->check.error <= entry->check.bound;
  for (double v : entry->perLaunch)
    if (std::isnan(v) || v > bound)
      entry->check.ok = false;
}

void CheckSet::fail(const std::string &name, const std::string &message) {
  entries_.push_back({});
  Entry &e = entries_.back();
  e.check.name = name;
  e.check.metric = "failed";
  e.check.error = std::numeric_limits<double>::quiet_NaN();
  e.check.bound = 0;
  e.check.ok = false;
  e.notes.push_back(message);
}

std::vector<Check> CheckSet::checks() const {
  std::vector<Check> out;
  for (const Entry &e : entries_)
    out.push_back(e.check);
  return out;
}

bool CheckSet::ok() const {
  if (entries_.empty())
    return false;
  for (const Entry &e : entries_)
    if (!e.check.ok)
      return false;
  return true;
}

std::string formatNumber(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char buf[32];
  if (value == std::floor(value) && std::fabs(value) < 1e9)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else
    std::snprintf(buf, sizeof buf, "%.3g", value);
  return buf;
}

std::string joinInts(const std::vector<int64_t> &values, size_t maxShown) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i == maxShown) {
      s += ",... (" + std::to_string(values.size()) + " in all)";
      break;
    }
    if (i)
      s += ",";
    s += std::to_string(values[i]);
  }
  return s;
}

std::string CheckSet::table() const {
  size_t nameW = 5, metricW = 6;
  for (const Entry &e : entries_) {
    nameW = std::max(nameW, e.check.name.size());
    metricW = std::max(metricW, e.check.metric.size());
  }
  auto pad = [](std::string s, size_t w) {
    if (s.size() < w)
      s.append(w - s.size(), ' ');
    return s;
  };
  std::ostringstream os;
  os << "  " << pad("check", nameW) << "  " << pad("metric", metricW) << "  "
     << pad("worst", 9) << "  " << pad("bound", 9) << "  result  per launch\n";
  for (const Entry &e : entries_) {
    std::string per;
    for (double v : e.perLaunch)
      per += (per.empty() ? "" : " ") + formatNumber(v);
    os << "  " << pad(e.check.name, nameW) << "  " << pad(e.check.metric, metricW)
       << "  " << pad(formatNumber(e.check.error), 9) << "  "
       << pad(formatNumber(e.check.bound), 9) << "  "
       << (e.check.ok ? "ok    " : "FAIL  ") << "  " << per << "\n";
    // Notes: all of a failing check's (deduplicated), the last of a passing one.
    std::vector<std::string> shown;
    if (e.check.ok) {
      if (!e.notes.empty())
        shown.push_back(e.notes.back());
    } else {
      for (const std::string &n : e.notes)
        if (std::find(shown.begin(), shown.end(), n) == shown.end())
          shown.push_back(n);
    }
    for (size_t i = 0; i < shown.size() && i < 6; ++i)
      os << "      " << shown[i] << "\n";
  }
  return os.str();
}

} // namespace loom::check::detail
