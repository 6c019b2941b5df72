#pragma once
// Shared pieces of the sim kernels (the simulated PrivateUse1 accelerator of
// infiniops_codegen/sim/): dtype dispatch, the checks every kernel makes
// before it takes a call, and the launch on a sim stream.
//
// A sim kernel works in two halves, as a GPU kernel does:
//  - on the calling thread it only reads metadata (shape, strides, dtype,
//    device, pointer values): device memory is mapped PROT_NONE there, so a
//    dereference of a device pointer faults. Every check, and every decline,
//    happens here, before the launch: once enqueued a kernel cannot decline.
//  - the computation runs later on the stream's worker thread, through
//    infini_sim::launch, in a closure that captures plain values only
//    (pointers, sizes, floats, Dims): the caller's Tensor objects are gone
//    by then (the call returns before the work runs).
// These kernels handle contiguous float32/float16/bfloat16 tensors of one
// dtype on one sim device; anything else declines and falls back to PyTorch.
// They compute in float and round to the dtype as PyTorch's CPU kernels do
// (kernels/cpu/half.h's conversions: torch-free, plain host code).

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <utility>

#include <infini_sim/runtime.h>

#include "core/decline.h"
#include "core/scalar.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/cpu/alpha.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/strided.h"
#include "kernels/dispatch.h"
#include "native_kernels.h"

namespace infini::ops::native::sim {

// The host types and conversions of the CPU kernels: the sim device is host
// memory, computed on by host code.
using cpu::alpha_as;
using cpu::BFloat16;
using cpu::from_float;
using cpu::Half;
using cpu::to_float;
using cpu::torch_fuses_multiply_add;  // the sim fallback runs PyTorch's CPU kernels

// The element type of a dtype on the sim device (kernels/dispatch.h).
template <class F>
KernelResult dispatch_floating(DataType dtype, F&& f) {
  return native::dispatch_floating<float, Half, BFloat16>(dtype, static_cast<F&&>(f));
}

inline infini_sim::simStream_t native_stream(Stream stream) noexcept {
  return static_cast<infini_sim::simStream_t>(stream.handle);
}

// Every tensor on the sim device the stream belongs to (which must be the
// calling thread's current one: launch throws otherwise), of one dtype,
// contiguous, with memory behind any element. Declines with the reason.
inline KernelResult same_device_dtype_contiguous(Stream stream,
                                         std::initializer_list<const Tensor*> tensors) {
  const Tensor& first = **tensors.begin();
  for (const Tensor* t : tensors) {
    if (t->device().type != DeviceType::kSim || t->device() != first.device()) {
      return decline("the tensors are not all on one sim device");
    }
    if (t->dtype() != first.dtype()) return decline("the tensors are not all of one dtype");
    if (!t->is_contiguous()) return decline("a tensor is not contiguous");
    if (t->data() == nullptr && t->numel() != 0) {
      return decline("a tensor has no memory the kernel can address");
    }
  }
  if (native_stream(stream) == nullptr) return decline("no sim stream was given");
  const int stream_device = infini_sim::stream_device(native_stream(stream));
  const int index = first.device().index < 0 ? infini_sim::current_device()
                                             : static_cast<int>(first.device().index);
  if (stream_device != index || stream_device != infini_sim::current_device()) {
    return decline("the stream is not on the tensors' device, the current one");
  }
  return true;
}

// Byte ranges of two contiguous tensors intersect.
inline bool overlaps(const Tensor& a, const Tensor& b) noexcept {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto a_lo = reinterpret_cast<std::uintptr_t>(a.data());
  const auto b_lo = reinterpret_cast<std::uintptr_t>(b.data());
  const auto a_hi = a_lo + static_cast<std::uintptr_t>(a.numel()) * a.element_size();
  const auto b_hi = b_lo + static_cast<std::uintptr_t>(b.numel()) * b.element_size();
  return a_lo < b_hi && b_lo < a_hi;
}

// out (contiguous) may be written element by element while reading input
// (contiguous): no overlap, or exactly the same tensor (in place).
inline bool safe_to_write(const Tensor& out, const Tensor& input) noexcept {
  return !overlaps(out, input) ||
         (out.data() == input.data() && out.shape() == input.shape() &&
          out.dtype() == input.dtype());
}

// Launches fn on the stream, with the blocks of `touched` accessible while it
// runs. fn must capture plain values only.
template <class F>
void launch(Stream stream, std::initializer_list<const void*> touched, F&& fn) {
  infini_sim::launch(native_stream(stream), touched, std::function<void()>(static_cast<F&&>(fn)));
}

// out[i] = op(float(a[i]), float(b[i])) for contiguous a, b and out, a and b
// broadcast to out's shape, launched on the stream; op captures plain values
// only. Declines (before any launch) when out's shape is not the broadcast
// shape of a and b. The caller has made the device, dtype, contiguity and
// overlap checks. Returns true without launching when out is empty.
template <class T, class Op>
KernelResult launch_binary(Stream stream, const Tensor& a, const Tensor& b, Tensor& out, Op op) {
  const int64_t n = out.numel();
  const T* x = static_cast<const T*>(a.data());
  const T* y = static_cast<const T*>(b.data());
  T* o = static_cast<T*>(out.data());
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    if (n == 0) return true;
    launch(stream, {x, y, o}, [x, y, o, n, op] {
      for (int64_t i = 0; i < n; ++i) o[i] = from_float<T>(op(to_float(x[i]), to_float(y[i])));
    });
    return true;
  }
  // Broadcasting: a and b read through stride-0 dims where they broadcast.
  Dims shape;
  if (!cpu::broadcast_shape(a.shape().span(), b.shape().span(), shape)) {
    return decline("the inputs' shapes do not broadcast");
  }
  if (!(shape == out.shape())) {
    return decline("out's shape is not the broadcast shape of the inputs");
  }
  if (n == 0) return true;
  Dims a_strides;
  Dims b_strides;
  if (!cpu::broadcast_strides(a, shape.span(), a_strides) ||
      !cpu::broadcast_strides(b, shape.span(), b_strides)) {
    return decline("the inputs' shapes do not broadcast");
  }
  Dims o_strides = out.strides();
  launch(stream, {x, y, o},
         [x, y, o, op, shape = std::move(shape), o_strides = std::move(o_strides),
          a_strides = std::move(a_strides), b_strides = std::move(b_strides)] {
           cpu::for_each_row<3>(
               shape, {o_strides, a_strides, b_strides},
               [&](const std::array<int64_t, 3>& off, int64_t count,
                   const std::array<int64_t, 3>& step) {
                 T* po = o + off[0];
                 const T* px = x + off[1];
                 const T* py = y + off[2];
                 for (int64_t j = 0; j < count; ++j) {
                   po[j * step[0]] =
                       from_float<T>(op(to_float(px[j * step[1]]), to_float(py[j * step[2]])));
                 }
               });
         });
  return true;
}

}  // namespace infini::ops::native::sim
