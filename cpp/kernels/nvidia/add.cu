// out = input + alpha * other, same shape, contiguous (no broadcasting).
#include "kernels/nvidia/common.cuh"

namespace infini::ops::native::nvidia {
namespace {

template <class T>
__global__ void add_kernel(const T* a, const T* b, float alpha, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = from_float<T>(to_float(a[i]) + alpha * to_float(b[i]));
  }
}

}  // namespace

bool add(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out,
         Stream stream) {
  if (alpha.is_complex() || alpha.is_bool()) return false;
  if (!same_device_dtype_contiguous({&self, &other, &out}) || !(self.shape() == out.shape()) ||
      !(other.shape() == out.shape()) || !safe_to_write(out, self) ||
      !safe_to_write(out, other)) {
    return false;
  }
  const int64_t n = out.numel();
  if (n == 0) return true;
  const auto a = static_cast<float>(alpha.to_double());
  const bool known = dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<blocks_for(n), kThreads, 0, native_stream(stream)>>>(
        static_cast<const T*>(self.data()), static_cast<const T*>(other.data()), a,
        static_cast<T*>(out.data()), n);
  });
  return known && launched();
}

}  // namespace infini::ops::native::nvidia
