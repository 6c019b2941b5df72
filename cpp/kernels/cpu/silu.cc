#include <cmath>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

bool silu(const Tensor& input, Tensor& out) {
  if (!elementwise_ok(out, {&input})) return false;
  if (!(input.shape() == out.shape())) return decline("out's shape is not input's shape");
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // x / (1 + exp(-x)) as PyTorch writes it: finite for large |x|.
    unary_loop<T>(input, out,
                  [](float x) { return x / (1.0f + std::exp(-x)); });
  });
}

}  // namespace infini::ops::native::cpu
