#include <cmath>
#include <type_traits>

#include "kernels/cpu/alpha.h"
#include "kernels/cpu/checks.h"
#include "kernels/cpu/elementwise.h"
#include "native_kernels.h"

// out = input + alpha * other, computed as PyTorch's CPU kernel computes it
// (the ufunc `add` of ATen/native/ufunc/add.h, instantiated per dtype by
// torchgen): alpha is first converted to the tensors' dtype
// (`alpha.to<scalar_t>()`, which raises on overflow), then
//  - the scalar loop (small tensors, strided rows, the tail of a row) computes
//    `self + alpha * other` in scalar_t: for float16 and bfloat16 each
//    operation rounds to the dtype (alpha * other, then the sum);
//  - the vectorized loop computes `fmadd(other, alpha, self)`: for float16
//    and bfloat16 in float, rounded once at the end; for float32 a fused
//    multiply-add, which the compiler also makes of the scalar loop in the
//    AVX2 and AVX512 builds (the default build, on CPUs without FMA or with
//    ATEN_CPU_CAPABILITY=default, rounds the product first in both loops).
// So float32 is one formula per CPU capability, and this kernel uses it.
// For float16 and bfloat16 the two loops agree wherever alpha * other is
// exact in the dtype (alpha 1, -1, 0, or not finite); for any other alpha
// which formula an element gets depends on where it lies in TensorIterator's
// loops (size, layout, CPU capability, threads), so this kernel takes such
// calls only below any vector loop's width (the scalar loop's formula) and
// leaves larger ones to PyTorch.

namespace infini::ops::native::cpu {
namespace {

// Fewer elements than the narrowest vector loop of a 16-bit type takes (two
// vectors: 16 elements with NEON, 32 with AVX2, 64 with AVX512): PyTorch
// computes every element in its scalar loop.
constexpr int64_t kScalarLoopOnly = 16;

// float32, fused: one rounding. Compiled for FMA (the CPU has it when this
// runs) with everything inlined, so the loop uses the instruction.
#if defined(__x86_64__)
[[gnu::target("fma"), gnu::flatten]]
#endif
KernelResult add_fused(const Tensor& input, const Tensor& other, float a, Tensor& out) {
  return binary_loop<float>(input, other, out,
                            [a](float x, float y) { return __builtin_fmaf(a, y, x); });
}

// float32, unfused: the product rounded to float, then the sum.
KernelResult add_unfused(const Tensor& input, const Tensor& other, float a, Tensor& out) {
  return binary_loop<float>(input, other, out, [a](float x, float y) {
    float product = a * y;
#if defined(__x86_64__)
    asm("" : "+x"(product));  // keeps the compiler from fusing it (-mfma builds)
#endif
    return x + product;
  });
}

}  // namespace

KernelResult add(const Tensor& input, const Tensor& other, const Scalar& alpha,
                 Tensor& out) {
  // A complex alpha has no meaning for real tensors, and PyTorch rejects a
  // bool alpha for non-bool results: leave both to PyTorch's errors.
  if (alpha.is_complex() || alpha.is_bool()) return decline("alpha is complex or bool");
  if (auto ok = elementwise_ok(out, {&input, &other}); !ok) return ok;
  return dispatch_floating(out.dtype(), [&](auto tag) -> KernelResult {
    using T = decltype(tag);
    float a = 0.0f;
    if (!alpha_as<T>(alpha, a)) {
      return decline("alpha overflows the tensors' dtype (PyTorch raises)");
    }
    if constexpr (std::is_same_v<T, float>) {
      return torch_fuses_multiply_add() ? add_fused(input, other, a, out)
                                        : add_unfused(input, other, a, out);
    } else if (a == 0.0f || a == 1.0f || a == -1.0f || !std::isfinite(a)) {
      // alpha * other is exact in T: both of PyTorch's loops round once.
      return binary_loop<T>(input, other, out,
                            [a](float x, float y) { return x + a * y; });
    } else if (out.numel() >= kScalarLoopOnly) {
      return decline(
          "float16 and bfloat16 with an alpha other than 1, -1 or 0 on 16 or more "
          "elements: PyTorch's vectorized and scalar loops round alpha * other "
          "differently there, and which one an element takes depends on the layout");
    } else {
      // PyTorch's scalar loop: alpha * other rounded to T, then the sum.
      return binary_loop<T>(input, other, out, [a](float x, float y) {
        return x + to_float(from_float<T>(a * y));
      });
    }
  });
}

}  // namespace infini::ops::native::cpu
