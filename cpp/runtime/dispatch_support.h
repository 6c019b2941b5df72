#pragma once
// Helpers for the generated dispatch (generated/ops.cpp): whether a native
// kernel applies, and the errors for a forced implementation that does not.

#include <initializer_list>
#include <string>

#include "core/core.h"

namespace infini::ops {

inline bool dtype_in(DataType dtype, std::initializer_list<DataType> dtypes) {
  for (DataType d : dtypes) {
    if (d == dtype) return true;
  }
  return false;
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
