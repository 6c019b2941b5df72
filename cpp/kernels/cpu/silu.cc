#include <cmath>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/kernels.h"

namespace infini::ops::native::cpu {

bool silu(const Tensor& input, Tensor& out) {
  if (!same_cpu_dtype({&input, &out}) || !(input.shape() == out.shape()) ||
      has_internal_overlap(out) || !safe_to_write(out, input)) {
    return false;
  }
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // x / (1 + exp(-x)) as PyTorch writes it: finite for large |x|.
    unary_loop<T>(input, out,
                  [](float x) { return x / (1.0f + std::exp(-x)); });
  });
}

}  // namespace infini::ops::native::cpu
