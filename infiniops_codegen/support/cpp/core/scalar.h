#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_SCALAR_H_
#define INFINI_OPS_CORE_SCALAR_H_

#include <cmath>
#include <complex>
#include <concepts>
#include <cstdint>

#include "core/error.h"

namespace infini::ops {

// A number argument of an operator (alpha, eps, fill value, ...). The kind is
// kept so a bool or an integer is not silently turned into a double.
class Scalar {
 public:
  enum class Kind : int8_t { kBool, kInt, kFloat, kComplex };

  Scalar() noexcept : Scalar(int64_t{0}) {}

  // Templates, so that e.g. Scalar(1) is not ambiguous between the integer,
  // floating and bool constructors.
  template <std::same_as<bool> T>
  Scalar(T value) noexcept : kind_(Kind::kBool), b_(value) {}

  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Scalar(T value) noexcept
      : kind_(Kind::kInt), i_(static_cast<int64_t>(value)) {}

  template <std::floating_point T>
  Scalar(T value) noexcept
      : kind_(Kind::kFloat), d_(static_cast<double>(value)) {}

  template <std::floating_point T>
  Scalar(std::complex<T> value) noexcept
      : kind_(Kind::kComplex), c_(static_cast<std::complex<double>>(value)) {}

  Kind kind() const noexcept { return kind_; }
  bool is_bool() const noexcept { return kind_ == Kind::kBool; }
  bool is_integral() const noexcept { return kind_ == Kind::kInt; }
  bool is_floating_point() const noexcept { return kind_ == Kind::kFloat; }
  bool is_complex() const noexcept { return kind_ == Kind::kComplex; }

  // TypeError for a complex value with a non-zero imaginary part, as Python's
  // float(complex) does.
  double to_double() const {
    switch (kind_) {
      case Kind::kBool:
        return b_ ? 1.0 : 0.0;
      case Kind::kInt:
        return static_cast<double>(i_);
      case Kind::kFloat:
        return d_;
      case Kind::kComplex:
        if (c_.imag() != 0.0) {
          throw TypeError(
              "complex scalar cannot be converted to a real number");
        }
        return c_.real();
    }
    return 0.0;
  }

  // Truncates toward zero; ValueError when the value has no int64 equivalent
  // (NaN, infinity, out of range) instead of undefined behaviour.
  int64_t to_int() const {
    switch (kind_) {
      case Kind::kBool:
        return b_ ? 1 : 0;
      case Kind::kInt:
        return i_;
      case Kind::kFloat:
      case Kind::kComplex: {
        const double value = to_double();
        // 2^63 is exactly representable; the valid range is [-2^63, 2^63).
        constexpr double kLimit = 9223372036854775808.0;
        if (!(value >= -kLimit && value < kLimit)) {
          throw ValueError(
              "scalar cannot be converted to int64 without overflow");
        }
        return static_cast<int64_t>(value);
      }
    }
    return 0;
  }

  bool to_bool() const noexcept {
    switch (kind_) {
      case Kind::kBool:
        return b_;
      case Kind::kInt:
        return i_ != 0;
      case Kind::kFloat:
        return d_ != 0.0;
      case Kind::kComplex:
        return c_ != std::complex<double>(0.0, 0.0);
    }
    return false;
  }

  std::complex<double> to_complex() const noexcept {
    switch (kind_) {
      case Kind::kBool:
        return {b_ ? 1.0 : 0.0, 0.0};
      case Kind::kInt:
        return {static_cast<double>(i_), 0.0};
      case Kind::kFloat:
        return {d_, 0.0};
      case Kind::kComplex:
        return c_;
    }
    return {};
  }

 private:
  Kind kind_;
  union {
    bool b_;
    int64_t i_;
    double d_;
    std::complex<double> c_;
  };
};

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_SCALAR_H_
