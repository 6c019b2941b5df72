#include <cmath>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

KernelResult silu(const Tensor& input, Tensor& out) {
  if (auto ok = elementwise_ok(out, {&input}); !ok) return ok;
  if (!(input.shape() == out.shape())) return decline("out's shape is not input's shape");
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // x / (1 + exp(-x)) as PyTorch writes it: finite for large |x|.
    unary_loop<T>(input, out,
                  [](float x) { return x / (1.0f + std::exp(-x)); });
    return true;  // unary_loop cannot decline: the shapes were checked above
  });
}

}  // namespace infini::ops::native::cpu
