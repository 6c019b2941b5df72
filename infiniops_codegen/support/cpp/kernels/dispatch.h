#pragma once
// What every platform's native kernels share: the choice of the element type
// for a dtype. Torch-free and device-neutral (host code of CUDA and vendor
// kernels includes it too).

#include "core/data_type.h"
#include "core/decline.h"

namespace infini::ops::native {

// Calls f(T{}) with T the platform's storage type of dtype, for the floating
// dtypes the kernels implement (F32, F16 and BF16: the platform's own types
// for float32, float16 and bfloat16), and returns true; declines (false)
// for any other dtype, and the caller falls back to PyTorch.
template <class F32, class F16, class BF16, class F>
bool dispatch_floating(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat32:
      f(F32{});
      return true;
    case DataType::kFloat16:
      f(F16{});
      return true;
    case DataType::kBFloat16:
      f(BF16{});
      return true;
    default:
      return decline("the kernel has no code for this dtype");
  }
}

}  // namespace infini::ops::native
