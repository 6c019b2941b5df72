#include <array>
#include <cmath>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/half.h"
#include "native_kernels.h"
#include "kernels/cpu/strided.h"

namespace infini::ops::native::cpu {
namespace {

template <class T>
void rms_norm_rows(const Tensor& input, const Tensor& weight, float eps,
                   Tensor& out) {
  const int64_t n = input.size(-1);
  const int64_t sx = input.stride(-1);
  const int64_t so = out.stride(-1);
  const int64_t sw = weight.stride(0);
  const T* x = static_cast<const T*>(input.data());
  const T* w = static_cast<const T*>(weight.data());
  T* o = static_cast<T*>(out.data());

  // Iterate over all dims but the last; each index is one row.
  const std::size_t outer = input.shape().size() - 1;
  Dims shape(input.shape().span().first(outer));
  Dims x_strides(input.strides().span().first(outer));
  Dims o_strides(out.strides().span().first(outer));
  for_each_index<2>(std::move(shape),
                    {std::move(x_strides), std::move(o_strides)},
                    [&](const std::array<int64_t, 2>& off) {
                      const T* row = x + off[0];
                      T* dst = o + off[1];
                      float sum = 0.0f;
                      for (int64_t j = 0; j < n; ++j) {
                        const float v = to_float(row[j * sx]);
                        sum += v * v;
                      }
                      const float inv_rms =
                          1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
                      for (int64_t j = 0; j < n; ++j) {
                        // One rounding at the end, as PyTorch's CPU kernel
                        // does.
                        const float v = to_float(row[j * sx]) * inv_rms;
                        dst[j * so] = from_float<T>(v * to_float(w[j * sw]));
                      }
                    });
}

}  // namespace

KernelResult rms_norm(const Tensor& input, const Tensor& weight, double eps,
                      Tensor& out) {
  if (!same_cpu_dtype({&input, &weight, &out})) {
    return decline("the tensors are not all CPU tensors of one dtype");
  }
  if (input.ndim() == 0) return decline("input is 0-dimensional");
  if (!(input.shape() == out.shape())) return decline("out's shape is not input's shape");
  if (weight.ndim() != 1 || weight.size(0) != input.size(-1)) {
    return decline("weight is not 1-D of input's last dim's size");
  }
  // In place (out is input) is fine: a row is fully read before the second
  // pass writes each element right after reading it.
  if (has_internal_overlap(out)) {
    return decline("out has several elements at one address (a stride-0 dim)");
  }
  if (!safe_to_write(out, input) || memory_overlaps(out, weight)) {
    return decline("out partly overlaps an input (only exact in-place use is supported)");
  }
  if (input.numel() == 0) return true;
  const auto eps_f = static_cast<float>(eps);
  return dispatch_floating(out.dtype(), [&](auto tag) {
    rms_norm_rows<decltype(tag)>(input, weight, eps_f, out);
    return true;
  });
}

}  // namespace infini::ops::native::cpu
