#pragma once

#include <bit>
#include <cstdint>

namespace infini::ops::native::cpu {

// 16-bit float storage types. Kernels load them into float, compute in float
// and round back once, as PyTorch's CPU kernels do (opmath = float).
struct Half {
  uint16_t bits;
};

struct BFloat16 {
  uint16_t bits;
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

inline float half_to_float(Half h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
  }
  if (exponent == 0x1f) {
    // Inf or NaN; the NaN payload is kept.
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + (127 - 15)) << 23) |
                              (mantissa << 13));
}

// Round to nearest, ties to even; overflow gives +-inf, NaN stays a (quiet)
// NaN. Follows the well-known bit trick (F. Giesen,
// "float_to_half_fast3_rtne").
inline Half float_to_half(float f) noexcept {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t out;
  if (x >= 0x47800000u) {
    // |f| >= 2^16 (inf after rounding) or inf/NaN.
    out = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {
    // Result is subnormal or zero: adding this magic lets the FPU's own
    // round-to-nearest-even place the 10 mantissa bits at the bottom.
    constexpr uint32_t kMagicBits = ((127 - 15) + (23 - 10) + 1) << 23;
    const float sum =
        std::bit_cast<float>(x) + std::bit_cast<float>(kMagicBits);
    out = static_cast<uint16_t>(std::bit_cast<uint32_t>(sum) - kMagicBits);
  } else {
    const uint32_t mantissa_odd = (x >> 13) & 1u;
    // Rebias the exponent and add the rounding bias; a mantissa carry rolls
    // into the exponent (and up to inf), which is the correct rounding.
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mantissa_odd;
    out = static_cast<uint16_t>(x >> 13);
  }
  return Half{static_cast<uint16_t>(out | (sign >> 16))};
}

inline float bfloat16_to_float(BFloat16 b) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(b.bits) << 16);
}

inline BFloat16 float_to_bfloat16(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncating could clear every mantissa bit and yield inf, so keep
    // the sign and force the quiet bit.
    return BFloat16{static_cast<uint16_t>((x >> 16) | 0x0040u)};
  }
  const uint32_t rounding_bias = 0x7fffu + ((x >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>((x + rounding_bias) >> 16)};
}

// Uniform load/store so kernels can be written once for all three types.
inline float to_float(float v) noexcept { return v; }
inline float to_float(Half v) noexcept { return half_to_float(v); }
inline float to_float(BFloat16 v) noexcept { return bfloat16_to_float(v); }

template <class T>
T from_float(float v) noexcept;

template <>
inline float from_float<float>(float v) noexcept {
  return v;
}

template <>
inline Half from_float<Half>(float v) noexcept {
  return float_to_half(v);
}

template <>
inline BFloat16 from_float<BFloat16>(float v) noexcept {
  return float_to_bfloat16(v);
}

}  // namespace infini::ops::native::cpu
