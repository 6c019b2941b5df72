// The native CPU kernel of maximum (op_specs/ops.yaml): two inputs,
// broadcast as PyTorch broadcasts them. binary_loop declines what it cannot
// compute (another dtype among the inputs, an out of another shape); its
// result is the kernel's: a declined call falls back to PyTorch. Kernels
// live in the core's namespace, whatever the library's C++ namespace.
#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

KernelResult maximum(const Tensor& self, const Tensor& other, Tensor& out) {
  if (auto ok = elementwise_ok(out, {&self, &other}); !ok) return ok;
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // As torch.maximum: NaN in either input gives NaN. binary_loop declines
    // an out that is not the inputs' broadcast shape.
    return binary_loop<T>(self, other, out, [](float x, float y) {
      return (x != x || x > y) ? x : y;
    });
  });
}

}  // namespace infini::ops::native::cpu
