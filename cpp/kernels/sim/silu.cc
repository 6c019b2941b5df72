// out = silu(input) = x / (1 + exp(-x)) on the sim device (as PyTorch writes
// it: finite for large |x|): contiguous tensors of one dtype and one shape,
// computed in float, rounded once.
#include <cmath>

#include "kernels/sim/common.h"

namespace infini::ops::native::sim {

KernelResult silu(const Tensor& self, Tensor& out, Stream stream) {
  if (auto ok = same_device_dtype_contiguous(stream, {&self, &out}); !ok) return ok;
  if (!(self.shape() == out.shape())) return decline("out's shape is not input's shape");
  if (!safe_to_write(out, self)) {
    return decline("out partly overlaps input (only exact in-place use is supported)");
  }
  const int64_t n = out.numel();
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return true;
    const T* x = static_cast<const T*>(self.data());
    T* o = static_cast<T*>(out.data());
    launch(stream, {x, o}, [x, o, n] {
      for (int64_t i = 0; i < n; ++i) {
        const float v = to_float(x[i]);
        o[i] = from_float<T>(v / (1.0f + std::exp(-v)));
      }
    });
    return true;
  });
}

}  // namespace infini::ops::native::sim
