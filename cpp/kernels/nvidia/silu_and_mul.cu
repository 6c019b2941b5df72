// input [..., 2d] -> out [..., d] = silu(input[..., :d]) * input[..., d:],
// contiguous input and out.
#include "kernels/nvidia/common.cuh"

namespace infini::ops::native::nvidia {
namespace {

template <class T>
__global__ void silu_and_mul_kernel(const T* input, T* out, int64_t rows, int64_t d) {
  const int64_t n = rows * d;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / d;
    const int64_t col = i - row * d;
    const float x = to_float(input[row * 2 * d + col]);
    const float y = to_float(input[row * 2 * d + d + col]);
    out[i] = from_float<T>(x / (1.0f + __expf(-x)) * y);
  }
}

}  // namespace

KernelResult silu_and_mul(const Tensor& input, Tensor& out, Stream stream) {
  if (auto ok = same_device_dtype_contiguous({&input, &out}); !ok) return ok;
  if (auto ok = last_dim_halved(input, out); !ok) return ok;
  if (overlaps(out, input)) return decline("out overlaps input");
  const int64_t d = out.size(-1);
  const int64_t rows = d == 0 ? 0 : out.numel() / d;
  if (out.numel() == 0) return true;
  return dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    silu_and_mul_kernel<T><<<blocks_for(out.numel()), kThreads, 0, native_stream(stream)>>>(
        static_cast<const T*>(input.data()), static_cast<T*>(out.data()), rows, d);
    return launched();
  });
}

}  // namespace infini::ops::native::nvidia
