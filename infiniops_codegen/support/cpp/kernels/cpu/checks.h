#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/decline.h"
#include "core/tensor.h"
#include "kernels/cpu/half.h"
#include "kernels/dispatch.h"

namespace infini::ops::native::cpu {

// The element type of a dtype on the CPU (kernels/dispatch.h).
template <class F>
KernelResult dispatch_floating(DataType dtype, F&& f) {
  return native::dispatch_floating<float, Half, BFloat16>(dtype, static_cast<F&&>(f));
}

// All tensors on the CPU, of one dtype, with memory behind any element.
inline bool same_cpu_dtype(std::initializer_list<const Tensor*> tensors) {
  const DataType dtype = (*tensors.begin())->dtype();
  for (const Tensor* t : tensors) {
    if (t->device().type != DeviceType::kCpu || t->dtype() != dtype) {
      return false;
    }
    if (t->data() == nullptr && t->numel() != 0) return false;
  }
  return true;
}

// Several elements at one address (a stride-0 dim of size > 1): writing it
// would race with itself; PyTorch refuses such outs, so we leave them to it.
inline bool has_internal_overlap(const Tensor& t) {
  for (std::size_t i = 0; i < t.shape().size(); ++i) {
    if (t.strides()[i] == 0 && t.shape()[i] > 1) return true;
  }
  return false;
}

// Whether the byte ranges spanned by a and b intersect (conservative: gaps
// of strided tensors count as covered).
inline bool memory_overlaps(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  auto range = [](const Tensor& t, std::intptr_t& lo, std::intptr_t& hi) {
    int64_t min_off = 0;
    int64_t max_off = 0;
    for (std::size_t i = 0; i < t.shape().size(); ++i) {
      const int64_t extent = (t.shape()[i] - 1) * t.strides()[i];
      (extent < 0 ? min_off : max_off) += extent;
    }
    const auto es = static_cast<int64_t>(t.element_size());
    const auto base = reinterpret_cast<std::intptr_t>(t.data());
    lo = base + min_off * es;
    hi = base + (max_off + 1) * es;
  };
  std::intptr_t a_lo, a_hi, b_lo, b_hi;
  range(a, a_lo, a_hi);
  range(b, b_lo, b_hi);
  return a_lo < b_hi && b_lo < a_hi;
}

// In-place use (out is exactly an input) is safe for kernels that read each
// element before writing the same element; any other overlap is not.
inline bool same_layout(const Tensor& a, const Tensor& b) {
  return a.data() == b.data() && a.shape() == b.shape() &&
         a.strides() == b.strides();
}

// out can be written element by element while reading `input`.
inline bool safe_to_write(const Tensor& out, const Tensor& input) {
  return !memory_overlaps(out, input) || same_layout(out, input);
}

// The checks every elementwise kernel here makes, declining with the reason
// (see core/decline.h): one dtype on the CPU, an out without internal
// overlap, each input either exactly out (in place) or apart from it.
inline KernelResult elementwise_ok(Tensor& out, std::initializer_list<const Tensor*> inputs) {
  if (out.device().type != DeviceType::kCpu || (out.data() == nullptr && out.numel() != 0)) {
    return decline("the tensors are not all CPU tensors of one dtype");
  }
  for (const Tensor* t : inputs) {
    if (t->device().type != DeviceType::kCpu || t->dtype() != out.dtype() ||
        (t->data() == nullptr && t->numel() != 0)) {
      return decline("the tensors are not all CPU tensors of one dtype");
    }
  }
  if (has_internal_overlap(out)) {
    return decline("out has several elements at one address (a stride-0 dim)");
  }
  for (const Tensor* t : inputs) {
    if (!safe_to_write(out, *t)) {
      return decline("out partly overlaps an input (only exact in-place use is supported)");
    }
  }
  return true;
}

}  // namespace infini::ops::native::cpu
