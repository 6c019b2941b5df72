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

bool silu_and_mul(const Tensor& input, Tensor& out, Stream stream) {
  if (!same_device_dtype_contiguous({&input, &out}) || input.ndim() == 0 ||
      input.ndim() != out.ndim() || overlaps(out, input)) {
    return false;
  }
  const int64_t d = out.size(-1);
  if (input.size(-1) != 2 * d) return false;
  for (int64_t i = 0; i + 1 < input.ndim(); ++i) {
    if (input.size(i) != out.size(i)) return false;
  }
  const int64_t rows = d == 0 ? 0 : out.numel() / d;
  if (out.numel() == 0) return true;
  const bool known = dispatch_floating(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    silu_and_mul_kernel<T><<<blocks_for(out.numel()), kThreads, 0, native_stream(stream)>>>(
        static_cast<const T*>(input.data()), static_cast<T*>(out.data()), rows, d);
  });
  return known && launched();
}

}  // namespace infini::ops::native::nvidia
