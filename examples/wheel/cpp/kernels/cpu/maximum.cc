// The native CPU kernel of maximum (op_specs/ops.yaml): two inputs,
// broadcast as PyTorch broadcasts them. binary_loop declines what it cannot
// compute (another dtype among the inputs, an out of another shape); its
// result is the kernel's: a declined call falls back to PyTorch. Kernels
// live in the core's namespace, whatever the library's C++ namespace.
#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

bool maximum(const Tensor& self, const Tensor& other, Tensor& out) {
  if (!elementwise_ok(out, {&self, &other})) return false;
  bool computed = false;
  const bool has_code = dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // As torch.maximum: NaN in either input gives NaN.
    computed = binary_loop<T>(self, other, out, [](float x, float y) {
      return (x != x || x > y) ? x : y;
    });
  });
  return has_code && computed;
}

}  // namespace infini::ops::native::cpu
