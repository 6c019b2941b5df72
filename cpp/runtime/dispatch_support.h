#pragma once
// Helpers for the generated dispatch (generated/ops.cpp): whether a native
// kernel applies, and the errors for a forced implementation that does not.

#include <initializer_list>
#include <span>
#include <string>

#include "core/core.h"

namespace infini::ops {

// A native kernel's dtypes, each with the most elements for which it is the
// default (-1: any size): past that, PyTorch's vectorised kernels are faster.
// implementation="native" ignores the limit.
struct NativeDtype {
  DataType dtype;
  int64_t up_to;
};

inline bool native_applies(Implementation impl, const Tensor& key,
                           std::initializer_list<NativeDtype> dtypes) {
  for (const NativeDtype& d : dtypes) {
    if (d.dtype == key.dtype()) {
      return d.up_to < 0 || impl == Implementation::kNative || key.numel() <= d.up_to;
    }
  }
  return false;
}

// The device of an op whose tensors come only in lists (the first one's;
// the CPU for an empty list).
inline Device list_device(std::span<const Tensor> tensors) {
  return tensors.empty() ? Device{} : tensors.front().device();
}

[[noreturn]] inline void no_native_kernel(const char* op) {
  throw NotImplementedError(std::string(op) +
                            "(): implementation='native' was requested, but "
                            "this op has no native kernel; use 'torch' or "
                            "'default'");
}

[[noreturn]] inline void native_unsupported(const char* op, const Tensor& key,
                                            const char* platforms) {
  throw NotImplementedError(
      std::string(op) + "(): implementation='native' was requested, but no " +
      "native kernel supports this call (device " +
      std::string(to_string(key.device().type)) + ", dtype " +
      std::string(to_string(key.dtype())) +
      "; native kernels exist for: " + platforms +
      " and may reject some layouts or shapes); use 'torch' or 'default'");
}

}  // namespace infini::ops
