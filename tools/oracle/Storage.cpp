//===- Storage.cpp - Rounding to a buffer's element type ------------------===//

#include "tools/oracle/Storage.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loom::oracle {

namespace {

struct Format {
  int digits;       ///< significand bits, the implicit one included
  int minExp;       ///< exponent of the smallest normal number
  double maxFinite; ///< largest finite value
};

Format formatOf(Storage s) {
  switch (s) {
  case Storage::BF16:
    return {8, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)};
  case Storage::F16:
    return {11, -14, 65504.0};
  case Storage::F32:
  case Storage::Exact:
    break;
  }
  return {24, -126, double(std::numeric_limits<float>::max())};
}

} // namespace

const char *storageName(Storage s) {
  switch (s) {
  case Storage::Exact:
    return "exact";
  case Storage::BF16:
    return "bf16";
  case Storage::F16:
    return "f16";
  case Storage::F32:
    return "f32";
  }
  return "?";
}

double roundTo(double x, Storage s) {
  if (s == Storage::Exact || !std::isfinite(x) || x == 0.0)
    return x;
  const Format f = formatOf(s);
  // The format's spacing at x is 2^q: q = e - (digits - 1) for |x| in
  // [2^e, 2^(e+1)), with e held at minExp below the normal range
  // (subnormals are evenly spaced). Scaling by 2^-q is exact in double, so
  // rint (round to nearest even, the default mode) does the one rounding.
  const int q = std::max(std::ilogb(x), f.minExp) - (f.digits - 1);
  const double r = std::ldexp(std::rint(std::ldexp(x, -q)), q);
  // Past the largest finite value: a tie or more above it rounds to inf.
  if (std::fabs(r) > f.maxFinite)
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

void roundAll(std::vector<double> &v, Storage s) {
  if (s == Storage::Exact)
    return;
  for (double &x : v)
    x = roundTo(x, s);
}

} // namespace loom::oracle
