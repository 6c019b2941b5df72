#pragma once
// Shared pieces of the NVIDIA kernels: dtype dispatch to CUDA storage types,
// the checks every kernel makes before it takes a call, launch geometry.
// These kernels handle contiguous float32/float16/bfloat16 tensors of one
// dtype on one device; anything else returns false and falls back to PyTorch.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "kernels/dispatch.h"
#include "native_kernels.h"

namespace infini::ops::native::nvidia {

template <class T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_float(float v) {
  return __float2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float(float v) {
  return __float2bfloat16(v);
}

// The element type of a dtype on NVIDIA GPUs (kernels/dispatch.h).
template <class F>
KernelResult dispatch_floating(DataType dtype, F&& f) {
  return native::dispatch_floating<float, __half, __nv_bfloat16>(dtype, static_cast<F&&>(f));
}

// Every tensor on one NVIDIA device, of one dtype, contiguous; declines
// with the reason otherwise.
inline KernelResult same_device_dtype_contiguous(std::initializer_list<const Tensor*> tensors) {
  const Tensor& first = **tensors.begin();
  for (const Tensor* t : tensors) {
    if (t->device().type != DeviceType::kNvidia || t->device() != first.device()) {
      return decline("the tensors are not all on one NVIDIA device");
    }
    if (t->dtype() != first.dtype()) return decline("the tensors are not all of one dtype");
    if (!t->is_contiguous()) return decline("a tensor is not contiguous");
  }
  return true;
}

// Byte ranges of two contiguous tensors intersect.
inline bool overlaps(const Tensor& a, const Tensor& b) {
  const auto* a_lo = static_cast<const char*>(a.data());
  const auto* b_lo = static_cast<const char*>(b.data());
  const auto* a_hi = a_lo + a.numel() * static_cast<int64_t>(a.element_size());
  const auto* b_hi = b_lo + b.numel() * static_cast<int64_t>(b.element_size());
  return a.numel() != 0 && b.numel() != 0 && a_lo < b_hi && b_lo < a_hi;
}

// out may be written element by element while reading input: no overlap,
// or exactly the same contiguous tensor (in place).
inline bool safe_to_write(const Tensor& out, const Tensor& input) {
  return !overlaps(out, input) ||
         (out.data() == input.data() && out.shape() == input.shape());
}

inline cudaStream_t native_stream(Stream stream) {
  return static_cast<cudaStream_t>(stream.handle);
}

constexpr int kThreads = 256;

inline unsigned int blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 65535 ? blocks : 65535);
}

// Whether the launch went through (bad configuration, no device): a failed
// launch declines, and PyTorch then runs the op, raising the device's error
// as its own if the device is unusable.
inline KernelResult launched() {
  if (cudaGetLastError() != cudaSuccess) return decline("the CUDA kernel launch failed");
  return true;
}

}  // namespace infini::ops::native::nvidia
