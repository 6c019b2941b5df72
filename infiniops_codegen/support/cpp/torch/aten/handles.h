#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_HANDLES_H_
#define INFINI_OPS_TORCH_ATEN_HANDLES_H_
// Torch tensors as core Tensors: the handle a Tensor made from an at::Tensor
// carries (from_aten), the switch that turns its reuse off, and whether a
// conversion back to ATen may reuse it (reusable_impl) instead of rebuilding
// the at::Tensor (from_blob.h). Part of the library's ATen conversions
// (torch/aten_convert.h).

#include <ATen/core/Tensor.h>

#include <atomic>

#include "core/core.h"

namespace infini::ops::torch_bridge {

// The handle ops of tensors that came from torch; a handle of another
// framework is never reinterpreted as an at::Tensor. Owning handles hold one
// reference to the TensorImpl; borrowed ones (tensor arguments of a Python
// call, whose objects the caller keeps alive) hold none, and their copies own.
// Opaque ones (owning) mark tensors that only ATen's dispatcher may see: not
// a plain dense tensor with storage (fake, meta, functorch, conj/neg bits,
// forward-AD duals, ...), one that requires grad, or any tensor while a
// TorchDispatchMode is active. All share the framework tag kTorchFramework.
#ifdef INFINI_OPS_LIBRARY_LINK
// In the Python module: the library's own, through its link (torch/library_link.h).
// Another name (module_side) than the library's objects: the two are not the
// same variable (AddressSanitizer's ODR check holds them to that).
inline namespace module_side {
extern const char& kTorchFramework;
}  // namespace module_side
#else
extern const char kTorchFramework;
#endif
extern const HandleOps kTorchHandleOps;
extern const HandleOps kTorchBorrowedHandleOps;
extern const HandleOps kTorchOpaqueHandleOps;

inline bool is_torch_handle(const SourceHandle& h) noexcept {
  return h.ops() != nullptr && h.ops()->framework == &kTorchFramework;
}

// Off: ignore handles and rebuild every at::Tensor with from_blob (to test
// and benchmark that path in the same process).
#ifdef INFINI_OPS_LIBRARY_LINK
inline namespace module_side {
extern std::atomic<bool>& g_handle_reuse;
}  // namespace module_side
#else
extern std::atomic<bool> g_handle_reuse;
#endif

// A framework mode or transform is active (a TorchDispatchMode, a functorch
// layer, functionalization: dispatch keys included in thread-local state
// beyond the defaults): calls must reach the dispatcher with the original
// tensors.
bool framework_mode_active() noexcept;

// The TensorImpl to reuse, or null for the from_blob path. An opaque handle
// is always reused (its tensor has no memory to rebuild a tensor from), and
// so is every handle while a framework mode is active (the mode must see the
// tensors the caller passed), and a wrapped number (the 0-dim tensor the
// binding made of a Python number given for a tensor, torch/call.cpp): its mark,
// which makes type promotion rank it like a Python scalar, is not in its
// data, shape or strides, so a from_blob rebuild would compute in another
// dtype. None of these checks runs while handle reuse is on.
inline c10::TensorImpl* reusable_impl(const Tensor& t) noexcept {
  const SourceHandle& h = t.handle();
  if (is_torch_handle(h) &&
      (g_handle_reuse.load(std::memory_order_relaxed) || h.opaque() ||
       static_cast<c10::TensorImpl*>(h.get())->is_wrapped_number() ||
       framework_mode_active())) [[likely]] {
    return static_cast<c10::TensorImpl*>(h.get());
  }
  return nullptr;
}

// ATen -> core, for the bridge's own use when a Python tensor arrives (its
// dtype and device alone: dtype_device.h). Wraps t: metadata copied, handle attached. Owning: t's TensorImpl gains a
// reference. Borrowed: none; only for a tensor its caller keeps alive for as
// long as the returned Tensor (a copy of which owns).
Tensor from_aten(const at::Tensor& t);
Tensor from_aten_borrowed(const at::Tensor& t);
// Opaque: only the handle (owning), no data pointer; shape and strides when
// they are concrete; for tensors that must reach ATen through the dispatcher
// untouched (see kTorchOpaqueHandleOps). Never reads the data pointer.
Tensor from_aten_opaque(const at::Tensor& t);

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_HANDLES_H_
