//===- Numerics.h - Storage types and conversions shared by task bodies ---===//
//
// bf16 and f16 are stored as 16-bit patterns and converted to fp32 for math,
// with round-to-nearest-even on the way back, the way GPU conversion
// instructions do it. Header-only and free of any toolkit: host bodies,
// oracles and tests use it; device bodies use their vendor's intrinsics.
//
//===----------------------------------------------------------------------===//
#ifndef LOOM_KERNELS_COMMON_NUMERICS_H
#define LOOM_KERNELS_COMMON_NUMERICS_H

#include <cstdint>
#include <cstring>

namespace loom {

/// Element types of buffers, in the order the runtime and metadata use.
enum class ElemType : int32_t { BF16 = 0, F16 = 1, F32 = 2, I32 = 3, I64 = 4 };

inline int64_t elemBytes(ElemType type) {
  switch (type) {
  case ElemType::BF16:
  case ElemType::F16:
    return 2;
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  case ElemType::I64:
    return 8;
  }
  return 0;
}

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// bfloat16 storage: the top half of an fp32.
struct bf16 {
  uint16_t bits;
};

inline float toFloat(bf16 v) { return bitsFloat(uint32_t(v.bits) << 16); }

inline bf16 toBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a (quiet) NaN
    return bf16{uint16_t((u >> 16) | 0x40)};
  u += 0x7fffu + ((u >> 16) & 1u); // round to nearest even
  return bf16{uint16_t(u >> 16)};
}

/// IEEE binary16 storage.
struct f16 {
  uint16_t bits;
};

inline float toFloat(f16 v) {
  uint32_t sign = uint32_t(v.bits & 0x8000u) << 16;
  uint32_t exp = (v.bits >> 10) & 0x1fu, man = v.bits & 0x3ffu;
  if (exp == 0x1f) // inf / NaN
    return bitsFloat(sign | 0x7f800000u | (man << 13));
  if (exp == 0) { // zero / subnormal: man * 2^-24
    float f = float(man) * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline f16 toF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) // NaN
    return f16{uint16_t(sign | 0x7e00u)};
  if (absu >= 0x477ff000u) // rounds to >= 65520: inf
    return f16{uint16_t(sign | 0x7c00u)};
  if (absu < 0x38800000u) { // below the smallest normal: subnormal or zero
    float scaled = bitsFloat(absu) * 16777216.0f; // in units of 2^-24
    uint32_t man = uint32_t(scaled);
    float rest = scaled - float(man);
    if (rest > 0.5f || (rest == 0.5f && (man & 1u)))
      ++man;
    return f16{uint16_t(sign | man)};
  }
  uint32_t rounded = absu + 0xfffu + ((absu >> 13) & 1u);
  return f16{uint16_t(sign | (((rounded >> 13) - (112u << 10)) & 0x7fffu))};
}

inline float toFloat(float v) { return v; }

/// Load/store any activation type as fp32.
template <typename T> inline float load(const T *p, int64_t i) {
  return toFloat(p[i]);
}
inline void store(bf16 *p, int64_t i, float v) { p[i] = toBf16(v); }
inline void store(f16 *p, int64_t i, float v) { p[i] = toF16(v); }
inline void store(float *p, int64_t i, float v) { p[i] = v; }

} // namespace loom

#endif // LOOM_KERNELS_COMMON_NUMERICS_H
