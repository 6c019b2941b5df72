// out = input * other on the sim device: contiguous tensors of one dtype,
// the inputs broadcast to out's shape; computed in float, rounded once.
#include "kernels/sim/common.h"

namespace infini::ops::native::sim {

bool mul(const Tensor& self, const Tensor& other, Tensor& out, Stream stream) {
  if (!same_device_dtype_contiguous(stream, {&self, &other, &out})) return false;
  if (!safe_to_write(out, self) || !safe_to_write(out, other)) {
    return decline("out partly overlaps an input (only exact in-place use is supported)");
  }
  bool ok = false;
  const bool known = dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ok = launch_binary<T>(stream, self, other, out, [](float x, float y) { return x * y; });
  });
  return known && ok;
}

}  // namespace infini::ops::native::sim
