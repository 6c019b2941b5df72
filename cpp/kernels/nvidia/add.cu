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

KernelResult add(const Tensor& self, const Tensor& other, const Scalar& alpha, Tensor& out,
                 Stream stream) {
  if (alpha.is_complex() || alpha.is_bool()) return decline("alpha is complex or bool");
  if (auto ok = same_device_dtype_contiguous({&self, &other, &out}); !ok) return ok;
  if (!(self.shape() == out.shape()) || !(other.shape() == out.shape())) {
    return decline("the inputs' shapes are not out's (this kernel does not broadcast)");
  }
  if (!safe_to_write(out, self) || !safe_to_write(out, other)) {
    return decline("out partly overlaps an input (only exact in-place use is supported)");
  }
  const int64_t n = out.numel();
  if (n == 0) return true;
  const auto a = static_cast<float>(alpha.to_double());
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<blocks_for(n), kThreads, 0, native_stream(stream)>>>(
        static_cast<const T*>(self.data()), static_cast<const T*>(other.data()), a,
        static_cast<T*>(out.data()), n);
    return launched();
  });
}

}  // namespace infini::ops::native::nvidia
