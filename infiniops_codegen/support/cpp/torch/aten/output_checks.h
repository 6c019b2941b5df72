#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_OUTPUT_CHECKS_H_
#define INFINI_OPS_TORCH_ATEN_OUTPUT_CHECKS_H_
// Around the ATen call of a wrapper whose tensors took the from_blob path:
// before it, outputs that overlap other arguments; after it, outputs ATen
// resized or moved, and the writes the caller's tensors' version counters
// must count. Part of the library's ATen conversions (torch/aten_convert.h).

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>

#include "core/core.h"
#include "torch/aten/tensor_args.h"

namespace infini::ops::torch_bridge {

// Before the ATen call. A from_blob tensor has a Storage of its own, so
// ATen's overlap checks, which compare storages, cannot see that an output
// shares memory with another argument, and the kernel would silently compute
// on aliased memory. Where any tensor takes that path, check byte ranges
// and raise what PyTorch raises for such a call (RuntimeError). An output
// that is exactly one of the inputs (in place: the same tensor, or for
// tensors made in C++ the same memory, dtype, shape and strides) stays
// allowed, and gets that input's at::Tensor (AtenTensor::share): ATen treats
// an output that is one of the inputs differently (TensorIterator then never
// resizes it), so two wrappers of one tensor would not behave as the
// caller's tensor does.
struct OverlapOutput {
  const Tensor& core;
  AtenTensor& aten;
};
struct OverlapInput {
  const Tensor* core;  // null: an absent optional
  const at::Tensor* aten;
  bool from_blob;
};
inline OverlapOutput output(const Tensor& t, AtenTensor& a) noexcept { return {t, a}; }
inline OverlapInput input(const Tensor& t, const AtenTensor& a) noexcept {
  return {&t, &a.get(), a.from_blob()};
}
inline OverlapInput input(const std::optional<Tensor>& t, const AtenOptionalTensor& a) noexcept {
  return t ? OverlapInput{&*t, &*a.get(), a.from_blob()} : OverlapInput{nullptr, nullptr, false};
}
// The wrappers call it only where some tensor took the from_blob path:
//   if (any_from_blob(a_out, a_self, ...)) [[unlikely]] check_overlap(...);
// so that the reuse path builds no argument lists.
template <class... A>
[[gnu::always_inline]] inline bool any_from_blob(const A&... a) noexcept {
  return (a.from_blob() || ...);
}
void check_overlap(const char* op, std::initializer_list<OverlapOutput> outs,
                   std::initializer_list<OverlapInput> ins);

// After the ATen call: an output that did not reuse its handle (from_blob
// path) cannot follow a resize or restride ATen made, so the caller's tensor
// would silently not hold the result. Raise instead (RuntimeError). ATen's
// "was resized" warning for that output is then false: the Python binding
// drops it when this error leaves the call.
class OutputNotResizable : public Error {
 public:
  using Error::Error;
};
[[noreturn]] void output_not_resizable(const Tensor& t, const at::Tensor& a,
                                       const char* op, const char* name);

void copy_back_moved_output(const Tensor& t, const at::Tensor& a);

// A tensor written through a stand-in at::Tensor (from_blob path) whose
// source has a handle: the source records as many writes as ATen made on
// the stand-in, so its version counter moves exactly as PyTorch's would.
void propagate_writes(const Tensor& t, const at::Tensor& a);

void check_rebuilt_output(const Tensor& t, const at::Tensor& a, const char* op,
                          const char* name);
inline void check_output(const Tensor& t, const at::Tensor& a, const char* op,
                         const char* name) {
  if (a.unsafeGetTensorImpl() == t.handle().get()) return;  // reused: ATen resized it
  check_rebuilt_output(t, a, op, name);
}

inline void check_output(std::span<const Tensor> ts, const AtenTensorList& as,
                         const char* op, const char* name) {
  for (std::size_t k = 0; k < ts.size(); ++k) check_output(ts[k], as.items[k], op, name);
}

// Inputs the schema marks as written (`Tensor(a!)`, not out=): on the
// from_blob path their writes are propagated like an output's.
inline void check_mutated(const Tensor& t, const at::Tensor& a) {
  if (a.unsafeGetTensorImpl() != t.handle().get() && t.has_handle()) propagate_writes(t, a);
}
inline void check_mutated(const std::optional<Tensor>& t, const AtenOptionalTensor& a) {
  if (t) check_mutated(*t, *a.get());
}
inline void check_mutated(std::span<const Tensor> ts, const AtenTensorList& as) {
  for (std::size_t k = 0; k < ts.size(); ++k) check_mutated(ts[k], as.items[k]);
}

// What ADInplaceOrView does for each written tensor of a call through the
// dispatcher.
inline void bump_version(const at::Tensor& t) { t.unsafeGetTensorImpl()->bump_version(); }
inline void bump_version(const AtenOptionalTensor& t) {
  if (t.get()) bump_version(*t.get());
}

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_OUTPUT_CHECKS_H_
