#pragma once

#include <array>
#include <cstdint>

#include "core/decline.h"
#include "core/tensor.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/strided.h"

namespace infini::ops::native::cpu {

// out[i] = op(float(a[i])) over out's shape; a must have out's shape. out is
// written only through its own strides.
template <class T, class Op>
void unary_loop(const Tensor& a, Tensor& out, Op op) {
  T* o = static_cast<T*>(out.data());
  const T* x = static_cast<const T*>(a.data());
  for_each_row<2>(out.shape(), {out.strides(), a.strides()},
                  [&](const std::array<int64_t, 2>& off, int64_t n,
                      const std::array<int64_t, 2>& step) {
                    T* po = o + off[0];
                    const T* px = x + off[1];
                    if (step[0] == 1 && step[1] == 1) {
                      for (int64_t j = 0; j < n; ++j) {
                        po[j] = from_float<T>(op(to_float(px[j])));
                      }
                    } else {
                      for (int64_t j = 0; j < n; ++j) {
                        po[j * step[0]] =
                            from_float<T>(op(to_float(px[j * step[1]])));
                      }
                    }
                  });
}

// out[i] = op(float(a[i]), float(b[i])) with a and b broadcast to out's
// shape. Declines when out's shape is not the broadcast shape of a and b.
template <class T, class Op>
KernelResult binary_loop(const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  Dims shape;
  if (!broadcast_shape(a.shape().span(), b.shape().span(), shape)) {
    return decline("the inputs' shapes do not broadcast");
  }
  if (!(shape == out.shape())) {
    return decline("out's shape is not the broadcast shape of the inputs");
  }
  Dims a_strides;
  Dims b_strides;
  broadcast_strides(a, shape.span(), a_strides);
  broadcast_strides(b, shape.span(), b_strides);

  T* o = static_cast<T*>(out.data());
  const T* x = static_cast<const T*>(a.data());
  const T* y = static_cast<const T*>(b.data());
  for_each_row<3>(
      std::move(shape),
      {out.strides(), std::move(a_strides), std::move(b_strides)},
      [&](const std::array<int64_t, 3>& off, int64_t n,
          const std::array<int64_t, 3>& step) {
        T* po = o + off[0];
        const T* px = x + off[1];
        const T* py = y + off[2];
        if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
          for (int64_t j = 0; j < n; ++j) {
            po[j] = from_float<T>(op(to_float(px[j]), to_float(py[j])));
          }
        } else {
          for (int64_t j = 0; j < n; ++j) {
            po[j * step[0]] = from_float<T>(
                op(to_float(px[j * step[1]]), to_float(py[j * step[2]])));
          }
        }
      });
  return true;
}

}  // namespace infini::ops::native::cpu
