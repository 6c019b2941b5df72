// out = input * other on the sim device: contiguous tensors of one dtype,
// the inputs broadcast to out's shape; computed in float, rounded once.
#include "kernels/sim/common.h"

namespace infini::ops::native::sim {

KernelResult mul(const Tensor& self, const Tensor& other, Tensor& out, Stream stream) {
  if (auto ok = same_device_dtype_contiguous(stream, {&self, &other, &out}); !ok) return ok;
  if (!safe_to_write(out, self) || !safe_to_write(out, other)) {
    return decline("out partly overlaps an input (only exact in-place use is supported)");
  }
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return launch_binary<T>(stream, self, other, out, [](float x, float y) { return x * y; });
  });
}

}  // namespace infini::ops::native::sim
