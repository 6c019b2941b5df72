// out = input + alpha * other on the sim device: contiguous tensors of one
// dtype, other (and input) broadcast to out's shape. As PyTorch's CPU kernel
// (cpp/kernels/cpu/add.cc says how): alpha is converted to the dtype first;
// float32 fuses the multiply-add where PyTorch's CPU build does; float16 and
// bfloat16 compute in float and round once (PyTorch's vectorized loop), or,
// below any vector loop's width with an alpha other than 1, -1 or 0, round
// alpha * other first (its scalar loop, the one such small calls take).
#include <cmath>
#include <type_traits>

#include "kernels/sim/common.h"

namespace infini::ops::native::sim {
namespace {

// Fewer elements than the narrowest vector loop of a 16-bit type takes:
// PyTorch computes every element in its scalar loop.
constexpr int64_t kScalarLoopOnly = 16;

}  // namespace

KernelResult add(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out,
                 Stream stream) {
  // A complex alpha has no meaning for real tensors, and PyTorch rejects a
  // bool alpha for non-bool results: leave both to PyTorch's errors.
  if (alpha.is_complex() || alpha.is_bool()) return decline("alpha is complex or bool");
  if (auto ok = same_device_dtype_contiguous(stream, {&self, &other, &out}); !ok) return ok;
  if (!safe_to_write(out, self) || !safe_to_write(out, other)) {
    return decline("out partly overlaps an input (only exact in-place use is supported)");
  }
  const bool fused = torch_fuses_multiply_add();
  return dispatch_floating(out.dtype(), [&](auto tag) -> KernelResult {
    using T = decltype(tag);
    float a = 0.0f;
    if (!alpha_as<T>(alpha, a)) {
      return decline("alpha overflows the tensors' dtype (PyTorch raises)");
    } else if (!std::is_same_v<T, float> && out.numel() < kScalarLoopOnly &&
               !(a == 0.0f || a == 1.0f || a == -1.0f || !std::isfinite(a))) {
      // PyTorch's scalar loop of a 16-bit type: alpha * other rounded to T,
      // then the sum (rounded once more by the store).
      return launch_binary<T>(stream, self, other, out, [a](float x, float y) {
        return x + to_float(from_float<T>(a * y));
      });
    } else if (fused) {
      return launch_binary<T>(stream, self, other, out,
                              [a](float x, float y) { return __builtin_fmaf(a, y, x); });
    } else {
      return launch_binary<T>(stream, self, other, out, [a](float x, float y) {
        float product = a * y;
#if defined(__x86_64__)
        asm("" : "+x"(product));  // keeps the compiler from fusing it (-mfma builds)
#endif
        return x + product;
      });
    }
  });
}

}  // namespace infini::ops::native::sim
