#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

bool add(const Tensor& input, const Tensor& other, const Scalar& alpha,
         Tensor& out) {
  // A complex alpha has no meaning for real tensors, and PyTorch rejects a
  // bool alpha for non-bool results: leave both to PyTorch's errors.
  if (alpha.is_complex() || alpha.is_bool()) return decline("alpha is complex or bool");
  if (!elementwise_ok(out, {&input, &other})) return false;
  const auto a = static_cast<float>(alpha.to_double());
  bool ok = false;
  const bool known = dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ok = binary_loop<T>(input, other, out,
                        [a](float x, float y) { return x + a * y; });
  });
  return known && ok;
}

}  // namespace infini::ops::native::cpu
