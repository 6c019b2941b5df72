// input [..., 2d] -> out [..., d] = silu(input[..., :d]) * input[..., d:] on
// the sim device, contiguous input and out of one dtype. As the composite
// computes it (at::silu, then at::mul_out): silu rounded to the dtype, then
// the product rounded: two roundings for float16 and bfloat16.
#include <cmath>

#include "kernels/sim/common.h"

namespace infini::ops::native::sim {

KernelResult silu_and_mul(const Tensor& input, Tensor& out, Stream stream) {
  if (auto ok = same_device_dtype_contiguous(stream, {&input, &out}); !ok) return ok;
  if (auto ok = last_dim_halved(input, out); !ok) return ok;
  const int64_t d = out.size(-1);
  // Each out element reads two distant input elements: refuse any overlap.
  if (overlaps(out, input)) return decline("out overlaps input");
  const int64_t n = out.numel();
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return true;
    const int64_t rows = n / d;
    const T* x = static_cast<const T*>(input.data());
    T* o = static_cast<T*>(out.data());
    launch(stream, {x, o}, [x, o, rows, d] {
      for (int64_t r = 0; r < rows; ++r) {
        const T* gate = x + r * 2 * d;
        const T* up = gate + d;
        T* dst = o + r * d;
        for (int64_t j = 0; j < d; ++j) {
          const float g = to_float(gate[j]);
          const float s = to_float(from_float<T>(g / (1.0f + std::exp(-g))));
          dst[j] = from_float<T>(s * to_float(up[j]));
        }
      }
    });
    return true;
  });
}

}  // namespace infini::ops::native::sim
