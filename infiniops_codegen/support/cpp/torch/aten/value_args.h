#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_VALUE_ARGS_H_
#define INFINI_OPS_TORCH_ATEN_VALUE_ARGS_H_
// A fallback wrapper's other arguments as ATen takes them: scalars and
// scalar lists, ints, floats, bools, int and float lists, strings and
// dtypes. Part of the library's ATen conversions (torch/aten_convert.h).

#include <c10/core/Scalar.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/OptionalArrayRef.h>
#include <c10/util/SmallVector.h>
#include <c10/util/string_view.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "core/core.h"
#include "torch/aten/dtype_device.h"

namespace infini::ops::torch_bridge {

at::Scalar to_aten(const Scalar& s);
inline std::optional<at::Scalar> to_aten(const std::optional<Scalar>& s) {
  if (!s) return std::nullopt;
  return to_aten(*s);
}

class AtenScalarList {
 public:
  c10::SmallVector<at::Scalar, 8> items;
  operator at::ArrayRef<at::Scalar>() const { return items; }
};
inline AtenScalarList to_aten(std::span<const Scalar> ss) {
  AtenScalarList list;
  for (const Scalar& s : ss) list.items.push_back(to_aten(s));
  return list;
}

inline int64_t to_aten(int64_t v) { return v; }
inline std::optional<int64_t> to_aten(std::optional<int64_t> v) { return v; }
inline double to_aten(double v) { return v; }
inline std::optional<double> to_aten(std::optional<double> v) { return v; }
inline bool to_aten(bool v) { return v; }
inline std::optional<bool> to_aten(std::optional<bool> v) { return v; }

inline at::IntArrayRef to_aten(std::span<const int64_t> v) {
  return at::IntArrayRef(v.data(), v.size());
}
inline at::OptionalIntArrayRef to_aten(
    std::optional<std::span<const int64_t>> v) {
  if (!v) return std::nullopt;
  return at::IntArrayRef(v->data(), v->size());
}
inline std::optional<at::ArrayRef<double>> to_aten(
    std::optional<std::span<const double>> v) {
  if (!v) return std::nullopt;
  return at::ArrayRef<double>(v->data(), v->size());
}

template <std::size_t N>
std::array<bool, N> to_aten(const std::array<bool, N>& v) {
  return v;
}

inline c10::string_view to_aten(std::string_view v) {
  return c10::string_view(v.data(), v.size());
}
inline std::optional<c10::string_view> to_aten(
    std::optional<std::string_view> v) {
  if (!v) return std::nullopt;
  return to_aten(*v);
}

inline std::optional<c10::ScalarType> to_aten(std::optional<DataType> dtype) {
  if (!dtype) return std::nullopt;
  return to_aten(*dtype);
}

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_VALUE_ARGS_H_
