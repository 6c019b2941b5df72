#pragma once
// What every platform's native kernels share: the choice of the element type
// for a dtype. Torch-free and device-neutral (host code of CUDA and vendor
// kernels includes it too).

#include <cstdint>
#include <type_traits>

#include "core/data_type.h"
#include "core/decline.h"
#include "core/tensor.h"

namespace infini::ops::native {

// Calls f(T{}) with T the platform's storage type of dtype, for the floating
// dtypes the kernels implement (F32, F16 and BF16: the platform's own types
// for float32, float16 and bfloat16), and returns what f returns: f computes
// or declines the call for that type. Any other dtype declines, and the
// caller falls back to PyTorch. f must return the result (a KernelResult or
// a bool): one that returns nothing would report success where it declined.
template <class F32, class F16, class BF16, class F>
KernelResult dispatch_floating(DataType dtype, F&& f) {
  using R = decltype(f(F32{}));
  static_assert(std::is_same_v<R, KernelResult> || std::is_same_v<R, bool>,
                "dispatch_floating: the function must return the kernel's result for the "
                "dtype, a KernelResult (`[&](auto tag) -> KernelResult { return "
                "binary_loop<decltype(tag)>(...); }`) or a bool; one returning nothing "
                "would report success where a helper declined");
  switch (dtype) {
    case DataType::kFloat32:
      return KernelResult(f(F32{}));
    case DataType::kFloat16:
      return KernelResult(f(F16{}));
    case DataType::kBFloat16:
      return KernelResult(f(BF16{}));
    default:
      return decline("the kernel has no code for this dtype");
  }
}

// silu_and_mul's shapes: out is input with its last dimension halved
// (input [..., 2d], out [..., d]); declines with the reason otherwise.
inline KernelResult last_dim_halved(const Tensor& input, const Tensor& out) {
  constexpr const char* kShape = "out's shape is not input's shape with the last dim halved";
  if (input.ndim() == 0 || input.ndim() != out.ndim()) return decline(kShape);
  if (input.size(-1) != 2 * out.size(-1)) return decline(kShape);
  for (int64_t i = 0; i + 1 < input.ndim(); ++i) {
    if (input.size(i) != out.size(i)) return decline(kShape);
  }
  return true;
}

}  // namespace infini::ops::native
