// Over the last dim: out = x / sqrt(mean(x^2) + eps) * weight on the sim
// device; contiguous input, weight and out of one dtype, weight 1-D of the
// last dim's size. In float, rounded once at the end, as the CPU kernel.
#include <cmath>

#include "kernels/sim/common.h"

namespace infini::ops::native::sim {

KernelResult rms_norm(const Tensor& input, const Tensor& weight, double eps, Tensor& out,
                      Stream stream) {
  if (auto ok = same_device_dtype_contiguous(stream, {&input, &weight, &out}); !ok) return ok;
  if (input.ndim() == 0) return decline("input is 0-dimensional");
  if (!(input.shape() == out.shape())) return decline("out's shape is not input's shape");
  if (weight.ndim() != 1 || weight.size(0) != input.size(-1)) {
    return decline("weight is not 1-D of input's last dim's size");
  }
  // In place (out is input) is fine: a row is fully read before the second
  // pass writes each element right after reading it.
  if (!safe_to_write(out, input) || overlaps(out, weight)) {
    return decline("out partly overlaps an input (only exact in-place use is supported)");
  }
  const int64_t numel = input.numel();
  const int64_t n = input.size(-1);
  const auto eps_f = static_cast<float>(eps);
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (numel == 0) return true;
    const int64_t rows = numel / n;
    const T* x = static_cast<const T*>(input.data());
    const T* w = static_cast<const T*>(weight.data());
    T* o = static_cast<T*>(out.data());
    launch(stream, {x, w, o}, [x, w, o, rows, n, eps_f] {
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = x + r * n;
        T* dst = o + r * n;
        float sum = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
          const float v = to_float(row[j]);
          sum += v * v;
        }
        const float inv_rms = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps_f);
        for (int64_t j = 0; j < n; ++j) {
          dst[j] = from_float<T>(to_float(row[j]) * inv_rms * to_float(w[j]));
        }
      }
    });
    return true;
  });
}

}  // namespace infini::ops::native::sim
