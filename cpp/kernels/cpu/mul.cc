#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

bool mul(const Tensor& input, const Tensor& other, Tensor& out) {
  if (!elementwise_ok(out, {&input, &other})) return false;
  bool ok = false;
  const bool known = dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ok = binary_loop<T>(input, other, out,
                        [](float x, float y) { return x * y; });
  });
  return known && ok;
}

}  // namespace infini::ops::native::cpu
