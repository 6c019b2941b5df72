// A C entry point to the native CPU kernels, built into a shared library by
// tests/test_core.py so the kernels can be compared against PyTorch on random
// strided inputs through ctypes. Test-only; the product never links it.
#include <cstdint>
#include <exception>
#include <span>
#include <string_view>

#include "core/core.h"
#include "native_kernels.h"

extern "C" {

struct TensorDesc {
  void* data;
  int64_t ndim;
  const int64_t* shape;
  const int64_t* strides;  // in elements
  int32_t dtype;           // a DataType value
};

// Returns 1 when the kernel computed the result, 0 when it declined, -1 for
// an unknown kernel name or a C++ exception.
int run_kernel(const char* name, const TensorDesc* tensors, int32_t count,
               double scalar) {
  using namespace infini::ops;
  try {
    auto make = [&](int32_t i) {
      const TensorDesc& d = tensors[i];
      const auto n = static_cast<std::size_t>(d.ndim);
      return Tensor(d.data, Dims(std::span<const int64_t>(d.shape, n)),
                    Dims(std::span<const int64_t>(d.strides, n)),
                    static_cast<DataType>(d.dtype), Device{});
    };
    const std::string_view op(name);
    namespace cpu = native::cpu;
    if (op == "add" && count == 3) {
      Tensor out = make(2);
      return cpu::add(make(0), make(1), Scalar(scalar), out) ? 1 : 0;
    }
    if (op == "mul" && count == 3) {
      Tensor out = make(2);
      return cpu::mul(make(0), make(1), out) ? 1 : 0;
    }
    if (op == "silu" && count == 2) {
      Tensor out = make(1);
      return cpu::silu(make(0), out) ? 1 : 0;
    }
    if (op == "rms_norm" && count == 3) {
      Tensor out = make(2);
      return cpu::rms_norm(make(0), make(1), scalar, out) ? 1 : 0;
    }
    if (op == "silu_and_mul" && count == 2) {
      Tensor out = make(1);
      return cpu::silu_and_mul(make(0), out) ? 1 : 0;
    }
    return -1;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // extern "C"
