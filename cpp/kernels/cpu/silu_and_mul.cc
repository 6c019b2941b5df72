#include <cmath>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

KernelResult silu_and_mul(const Tensor& input, Tensor& out) {
  if (!same_cpu_dtype({&input, &out})) {
    return decline("the tensors are not all CPU tensors of one dtype");
  }
  if (auto ok = last_dim_halved(input, out); !ok) return ok;
  const int64_t d = out.size(-1);
  // Each out element reads two distant input elements, so even an exact
  // alias of one half would be read after being written: refuse any overlap.
  if (has_internal_overlap(out) || memory_overlaps(out, input)) {
    return decline("out overlaps input");
  }

  // The two halves are plain strided views of input; then this is mul.
  const Tensor gate = input.slice(-1, 0, d);
  const Tensor up = input.slice(-1, d, 2 * d);
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // As the composite computes it: silu rounded to T (at::silu's result),
    // then the product rounded (at::mul_out): two roundings for float16 and
    // bfloat16, not one.
    return binary_loop<T>(gate, up, out, [](float x, float y) {
      return to_float(from_float<T>(x / (1.0f + std::exp(-x)))) * y;
    });
  });
}

}  // namespace infini::ops::native::cpu
