#pragma once
// add's alpha as PyTorch's CPU kernel converts and applies it, shared by the
// kernels that must agree with that kernel bit for bit: the CPU's own, and
// the simulated accelerator's (whose fallback runs PyTorch's CPU kernels).
// Torch-free host code.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/scalar.h"
#include "kernels/cpu/half.h"

namespace infini::ops::native::cpu {

// The largest finite value of T: what PyTorch's checked conversion of alpha
// compares it with.
template <class T>
inline constexpr double kMaxFinite = 0.0;
template <>
inline constexpr double kMaxFinite<float> = 3.4028234663852886e38;
template <>
inline constexpr double kMaxFinite<Half> = 65504.0;
template <>
inline constexpr double kMaxFinite<BFloat16> = 3.3895313892515355e38;

// alpha as `alpha.to<T>()` makes it: an integer through float, a double
// through float, then rounded to T. False where that conversion overflows
// (PyTorch raises "value cannot be converted to type ... without overflow";
// infinity and NaN convert).
template <class T>
bool alpha_as(const Scalar& alpha, float& value) {
  float f;
  if (alpha.is_integral()) {
    const int64_t i = alpha.to_int();
    if (i >= -256 && i <= 256) {  // exact in every dtype here (the default, 1)
      value = static_cast<float>(i);
      return true;
    }
    f = static_cast<float>(i);  // ATen compares it as a float
    if (std::fabs(f) > kMaxFinite<T>) return false;
  } else {
    const double d = alpha.to_double();
    if (std::isfinite(d) && std::fabs(d) > kMaxFinite<T>) return false;
    f = static_cast<float>(d);
  }
  value = to_float(from_float<T>(f));
  return true;
}

// Whether PyTorch's float32 add fuses the multiply-add: its AVX2 and AVX512
// kernels do (chosen on every x86 CPU with AVX2 and FMA unless
// ATEN_CPU_CAPABILITY=default), and so do its ARM builds; its x86 default
// build does not.
inline bool torch_fuses_multiply_add() noexcept {
#if defined(__x86_64__)
  static const bool fused = [] {
    const char* capability = std::getenv("ATEN_CPU_CAPABILITY");
    if (capability != nullptr && std::strcmp(capability, "default") == 0) return false;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return fused;
#else
  return true;
#endif
}

}  // namespace infini::ops::native::cpu
