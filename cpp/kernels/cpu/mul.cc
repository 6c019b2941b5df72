#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

namespace infini::ops::native::cpu {

KernelResult mul(const Tensor& input, const Tensor& other, Tensor& out) {
  if (auto ok = elementwise_ok(out, {&input, &other}); !ok) return ok;
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return binary_loop<T>(input, other, out, [](float x, float y) { return x * y; });
  });
}

}  // namespace infini::ops::native::cpu
