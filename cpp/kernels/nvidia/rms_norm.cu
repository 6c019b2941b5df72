// Over the last dim: out = x / sqrt(mean(x^2) + eps) * weight; contiguous
// input/out, weight 1-D of the last dim's size. One block per row.
#include "kernels/nvidia/common.cuh"

namespace infini::ops::native::nvidia {
namespace {

template <class T>
__global__ void rms_norm_kernel(const T* input, const T* weight, float eps, T* out,
                                int64_t n) {
  __shared__ float partial[kThreads];
  const T* x = input + blockIdx.x * n;
  T* o = out + blockIdx.x * n;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = to_float(x[j]);
    sum += v * v;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) partial[threadIdx.x] += partial[threadIdx.x + step];
    __syncthreads();
  }
  const float inv_rms = rsqrtf(partial[0] / static_cast<float>(n) + eps);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    o[j] = from_float<T>(to_float(x[j]) * inv_rms * to_float(weight[j]));
  }
}

}  // namespace

KernelResult rms_norm(const Tensor& input, const Tensor& weight, double eps, Tensor& out,
                      Stream stream) {
  if (auto ok = same_device_dtype_contiguous({&input, &weight, &out}); !ok) return ok;
  if (input.ndim() == 0) return decline("input is 0-dimensional");
  if (!(input.shape() == out.shape())) return decline("out's shape is not input's shape");
  if (weight.ndim() != 1 || weight.size(0) != input.size(-1)) {
    return decline("weight is not 1-D of input's last dim's size");
  }
  if (!safe_to_write(out, input) || overlaps(out, weight)) {
    return decline("out partly overlaps an input (only exact in-place use is supported)");
  }
  const int64_t n = input.size(-1);
  if (input.numel() == 0) return true;
  const int64_t rows = input.numel() / n;
  if (rows > 2147483647) return decline("more rows than one launch's grid holds");
  const auto eps_f = static_cast<float>(eps);
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    rms_norm_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, native_stream(stream)>>>(
        static_cast<const T*>(input.data()), static_cast<const T*>(weight.data()), eps_f,
        static_cast<T*>(out.data()), n);
    return launched();
  });
}

}  // namespace infini::ops::native::nvidia
