//===- Lengths.cpp - Length generators of the workload files --------------===//
#include "bench/model/Lengths.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace loom::model {
namespace {

/// Splits "a:b:c" at ':'.
std::vector<std::string> splitColons(const std::string &text) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == ':')
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

bool parseInt(const std::string &text, int64_t &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  value = v;
  return true;
}

bool parseDouble(const std::string &text, double &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v))
    return false;
  value = v;
  return true;
}

/// Half away from zero, as the README's Python line does (math.floor(x+0.5)
/// for the positive values here), not Python's round-half-to-even.
int64_t roundHalfUp(double x) { return static_cast<int64_t>(std::floor(x + 0.5)); }

} // namespace

double normalQuantile(double p) {
  // Phi(x) = erfc(-x / sqrt(2)) / 2 is increasing; 200 halvings of [-40, 40]
  // reach the spacing of doubles long before the loop ends.
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi)
      break;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

bool expandRequestLengths(const std::string &generator, int64_t batch,
                          std::vector<int64_t> &lengths, std::string &error) {
  std::vector<std::string> parts = splitColons(generator);
  const std::string &kind = parts[0];
  lengths.clear();
  if (batch < 1) {
    error = "a generated length list needs batch >= 1";
    return false;
  }
  if (kind == "uniform") {
    int64_t n = 0;
    if (parts.size() != 2 || !parseInt(parts[1], n) || n < 0) {
      error = "expected 'uniform:N' with an integer N >= 0, got '" + generator + "'";
      return false;
    }
    lengths.assign(size_t(batch), n);
    return true;
  }
  auto quantile = [&](int64_t i) {
    return normalQuantile((double(i) + 0.5) / double(batch));
  };
  if (kind == "lognormal") {
    double median = 0, sigma = 0;
    int64_t clip = 0;
    if (parts.size() != 4 || !parseDouble(parts[1], median) ||
        !parseDouble(parts[2], sigma) || !parseInt(parts[3], clip) ||
        median <= 0 || sigma < 0 || clip < 1) {
      error = "expected 'lognormal:MEDIAN:SIGMA:CLIP' with MEDIAN > 0, "
              "SIGMA >= 0, integer CLIP >= 1, got '" + generator + "'";
      return false;
    }
    for (int64_t i = 0; i < batch; ++i) {
      int64_t len = roundHalfUp(median * std::exp(sigma * quantile(i)));
      lengths.push_back(std::min(std::max<int64_t>(len, 1), clip));
    }
    return true;
  }
  if (kind == "normal") {
    double mean = 0, stddev = 0;
    if (parts.size() != 3 || !parseDouble(parts[1], mean) ||
        !parseDouble(parts[2], stddev) || stddev < 0) {
      error = "expected 'normal:MEAN:STD' with STD >= 0, got '" + generator + "'";
      return false;
    }
    for (int64_t i = 0; i < batch; ++i)
      lengths.push_back(std::max<int64_t>(roundHalfUp(mean + stddev * quantile(i)), 1));
    return true;
  }
  error = "unknown length generator '" + generator +
          "' (expected uniform:N, lognormal:MEDIAN:SIGMA:CLIP or normal:MEAN:STD)";
  return false;
}

bool expandSequenceLengths(const std::string &generator,
                           std::vector<int64_t> &lengths, std::string &error) {
  std::vector<std::string> parts = splitColons(generator);
  lengths.clear();
  size_t x = parts.size() == 2 ? parts[1].find('x') : std::string::npos;
  int64_t count = 0, len = 0;
  if (parts[0] != "uniform" || x == std::string::npos ||
      !parseInt(parts[1].substr(0, x), count) ||
      !parseInt(parts[1].substr(x + 1), len) || count < 1 || len < 1) {
    error = "expected 'uniform:COUNTxLEN' with integers COUNT, LEN >= 1, got '" +
            generator + "'";
    return false;
  }
  lengths.assign(size_t(count), len);
  return true;
}

} // namespace loom::model
