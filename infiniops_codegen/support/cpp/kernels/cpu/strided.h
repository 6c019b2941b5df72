#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "core/small_dims.h"
#include "core/tensor.h"

namespace infini::ops::native::cpu {

// Numpy broadcasting of two shapes; false when they are incompatible.
inline bool broadcast_shape(std::span<const int64_t> a,
                            std::span<const int64_t> b, Dims& result) {
  const std::size_t n = a.size() > b.size() ? a.size() : b.size();
  result = Dims(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Align from the right; missing leading dims act as size 1.
    const int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (sa != sb && sa != 1 && sb != 1) return false;
    result[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return true;
}

// t's strides (in elements) for iterating over `shape`, with broadcast dims
// given stride 0; false when t cannot be broadcast to shape.
inline bool broadcast_strides(const Tensor& t, std::span<const int64_t> shape,
                              Dims& strides) {
  const std::size_t n = shape.size();
  const std::size_t tn = t.shape().size();
  if (tn > n) return false;
  strides = Dims(n);
  for (std::size_t i = 0; i < tn; ++i) {
    const std::size_t td = tn - 1 - i;
    const std::size_t d = n - 1 - i;
    if (t.shape()[td] == shape[d]) {
      strides[d] = t.strides()[td];
    } else if (t.shape()[td] != 1) {
      return false;
    }
  }
  return true;
}

// Visits every index of `shape` for N operands that share it (strides[k] are
// operand k's strides, stride 0 for broadcast dims). f is called once per
// innermost row as f(offsets, count, steps): element j of the row lives at
// offsets[k] + j * steps[k] for operand k, all in elements.
//
// Size-1 dims are dropped and neighbouring dims that are laid out
// back-to-back in every operand are merged first, so all-contiguous operands
// become one flat row: that is the fast path, without a separate code path.
template <std::size_t N, class F>
void for_each_row(Dims shape, std::array<Dims, N> strides, F&& f) {
  for (int64_t size : shape) {
    if (size == 0) return;
  }
  std::size_t nd = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    bool mergeable = nd > 0;
    for (std::size_t k = 0; k < N && mergeable; ++k) {
      mergeable = strides[k][nd - 1] == strides[k][i] * shape[i];
    }
    if (mergeable) {
      shape[nd - 1] *= shape[i];
      for (std::size_t k = 0; k < N; ++k) strides[k][nd - 1] = strides[k][i];
    } else {
      shape[nd] = shape[i];
      for (std::size_t k = 0; k < N; ++k) strides[k][nd] = strides[k][i];
      ++nd;
    }
  }

  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> steps{};
  if (nd == 0) {
    f(std::as_const(offsets), int64_t{1}, std::as_const(steps));
    return;
  }
  const std::size_t inner = nd - 1;
  for (std::size_t k = 0; k < N; ++k) steps[k] = strides[k][inner];
  const int64_t count = shape[inner];

  Dims index(inner);  // counters of the outer dims, all zero
  while (true) {
    f(std::as_const(offsets), count, std::as_const(steps));
    // Odometer increment over the outer dims, innermost first.
    std::size_t d = inner;
    while (d > 0) {
      --d;
      for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (std::size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

// Like for_each_row, but f(offsets) is called for every single index.
template <std::size_t N, class F>
void for_each_index(Dims shape, std::array<Dims, N> strides, F&& f) {
  for_each_row<N>(std::move(shape), std::move(strides),
                  [&](const std::array<int64_t, N>& base, int64_t count,
                      const std::array<int64_t, N>& steps) {
                    std::array<int64_t, N> offsets = base;
                    for (int64_t j = 0; j < count; ++j) {
                      f(std::as_const(offsets));
                      for (std::size_t k = 0; k < N; ++k)
                        offsets[k] += steps[k];
                    }
                  });
}

}  // namespace infini::ops::native::cpu
