#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_RESULTS_H_
#define INFINI_OPS_TORCH_ATEN_RESULTS_H_
// Calls without out= (torch/lane.h: Results): the outputs ATen's functional
// overload made, handed to the binding, or outputs allocated ahead from a
// run of the op on meta tensors. Part of the library's ATen conversions
// (torch/aten_convert.h).

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <optional>
#include <tuple>
#include <utility>

#include "core/core.h"
#include "torch/aten/direct_mode.h"
#include "torch/aten/handles.h"
#include "torch/aten/tensor_args.h"
#include "torch/lane.h"

namespace infini::ops::torch_bridge {

// Outputs a fallback made (ATen's functional overload) handed to the binding.
inline void give(Results& r, at::Tensor&& t) {
  if (r.count == Results::kMax) throw Error("more outputs than Results holds");
  r.impls[r.count++] = t.unsafeReleaseTensorImpl();
}
template <class... T>
void give(Results& r, std::tuple<T...>&& ts) {
  std::apply([&](auto&... t) { (give(r, std::move(t)), ...); }, ts);
}

// Stand-ins on the meta device of a call's arguments: the same sizes,
// strides and dtype, no data (a wrapped number is kept as it is). Running the op on them gives its outputs' geometry, as torch's
// own call would allocate them.
at::Tensor to_meta(const at::Tensor& t);
inline at::Tensor to_meta(const AtenTensor& t) { return to_meta(t.get()); }
inline std::optional<at::Tensor> to_meta(const AtenOptionalTensor& t) {
  if (!t.get()) return std::nullopt;
  return to_meta(*t.get());
}
class MetaList {
 public:
  c10::SmallVector<at::Tensor, kLaneListItems> items;
  operator at::TensorList() const { return items; }
  operator at::ITensorListRef() const { return at::TensorList(items); }
};
inline MetaList to_meta(const AtenBorrowedList& list) {
  MetaList result;
  for (const at::Tensor& t : list.items) result.items.push_back(to_meta(t));
  return result;
}

// The device a call's outputs go to: the first tensor's off the CPU (a CPU
// 0-dim tensor may join tensors of another device, meta ones included),
// else the CPU.
inline void first_device(c10::Device& d, const at::Tensor& t) {
  if (d.is_cpu() && t.defined() && !t.is_cpu()) d = t.device();
}
inline void first_device(c10::Device& d, const AtenTensor& t) { first_device(d, t.get()); }
inline void first_device(c10::Device& d, const AtenOptionalTensor& t) {
  if (t.get()) first_device(d, *t.get());
}
inline void first_device(c10::Device& d, const AtenBorrowedList& list) {
  for (const at::Tensor& t : list.items) first_device(d, t);
}
template <class... T>
c10::Device output_device(const T&... tensors) {
  c10::Device d(c10::DeviceType::CPU);
  (first_device(d, tensors), ...);
  return d;
}

// Whether a call without out= may allocate its outputs with a meta run and
// go the out= way (where a native kernel may take it): no mode or profiler
// to see the meta run, and no tensor autograd must follow (the functional
// overload records the graph that torch's own call records).
inline bool meta_plain(const at::Tensor& t) {
  return !t.defined() || (!t.requires_grad() && !t._fw_grad(/*level=*/0).defined());
}
inline bool meta_plain(const AtenTensor& t) { return meta_plain(t.get()); }
inline bool meta_plain(const AtenOptionalTensor& t) { return !t.get() || meta_plain(*t.get()); }
inline bool meta_plain(const AtenBorrowedList& list) {
  for (const at::Tensor& t : list.items) {
    if (!meta_plain(t)) return false;
  }
  return true;
}
template <class... T>
bool meta_allowed(const T&... tensors) {
  return (meta_plain(tensors) && ...) && direct_cpu_context();
}

// Whether a composite's outputs allocated for a call without out= are shaped
// by its body run on meta tensors: where the call must reach the native
// kernel (implementation='native'), or the outputs go the from_blob path,
// which cannot grow them.
inline bool shape_composite_outputs(bool native) noexcept {
  return native || !g_handle_reuse.load(std::memory_order_relaxed);
}
// An empty meta tensor of t's dtype: a composite's output for its meta run.
at::Tensor empty_meta_like(const AtenTensor& t);

// Empty outputs on `device` with the geometry of meta ones.
void give_like(Results& r, const at::Tensor& meta, c10::Device device);
template <class... T>
void give_like(Results& r, const std::tuple<T...>& metas, c10::Device device) {
  std::apply([&](const auto&... t) { (give_like(r, t, device), ...); }, metas);
}
// An empty output of t's shape, dtype and device (a composite's 'like').
void give_like(Results& r, const AtenTensor& t);
// An empty (0-element) output of t's dtype and device, which the fallback
// resizes: a composite's output that no 'like' shapes.
void give_empty_like(Results& r, const at::Tensor& t);

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_RESULTS_H_
