// Torch handles: the handle ops, the reuse switch, ATen -> core (handles.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/handles.h"

#include <c10/core/TensorImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/intrusive_ptr.h>

#include <span>
#include <utility>

#include "core/observe.h"
#include "torch/aten/dtype_device.h"

namespace infini::ops::torch_bridge {

namespace {

void retain(void* impl) noexcept {
  c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(impl));
}

void release(void* impl) noexcept {
  c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(impl));
}

void keep(void*) noexcept {}  // a borrowed handle holds no reference

// What the dispatcher's ADInplaceOrView kernel does for each written tensor
// of an out= or in-place call. Raises, as PyTorch does, for an inference
// tensor outside inference mode; a no-op for one inside it.
void bump(void* impl, int64_t times) {
  for (int64_t k = 0; k < times; ++k) static_cast<c10::TensorImpl*>(impl)->bump_version();
}

}  // namespace

const char kTorchFramework = 0;
const HandleOps kTorchHandleOps{retain, release, nullptr, &kTorchFramework, false, bump};
const HandleOps kTorchBorrowedHandleOps{retain, keep, &kTorchHandleOps, &kTorchFramework,
                                        false, bump};
const HandleOps kTorchOpaqueHandleOps{retain, release, nullptr, &kTorchFramework, true, bump};
std::atomic<bool> g_handle_reuse{true};

bool framework_mode_active() noexcept {
  // BackendSelect and ADInplaceOrView are always included; a TorchDispatchMode
  // includes Python (FakeTensorMode and FunctionalTensorMode too), a vmap or
  // grad layer FuncTorchDynamicLayerFrontMode, and so on.
  const auto included = c10::impl::tls_local_dispatch_key_set().included_;
  return !(included - c10::default_included_set).empty();
}

namespace {

Tensor wrap(const at::Tensor& t, SourceHandle handle) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  const auto sizes = impl->sizes();
  const auto strides = impl->strides();
  return Tensor(t.data_ptr(), std::span<const int64_t>(sizes.data(), sizes.size()),
                std::span<const int64_t>(strides.data(), strides.size()),
                from_aten(t.scalar_type()), from_aten(t.device()), std::move(handle));
}

}  // namespace

Tensor from_aten(const at::Tensor& t) {
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  retain(impl);  // the handle owns this reference
  return wrap(t, SourceHandle::adopt(&kTorchHandleOps, impl));
}

Tensor from_aten_borrowed(const at::Tensor& t) {
  return wrap(t, SourceHandle::adopt(&kTorchBorrowedHandleOps, t.unsafeGetTensorImpl()));
}

Tensor from_aten_opaque(const at::Tensor& t) {
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  // Only the dispatcher computes on this tensor: the device is a hint for the
  // library's dispatch (a device the library has no platform for, such as
  // meta, counts as the CPU: no native kernel ever sees an opaque tensor).
  Device device{};
  try {
    device = from_aten(t.device());
  } catch (const Error&) {
  }
  Dims shape;
  Dims strides;
  if (!impl->has_symbolic_sizes_strides() && impl->layout() == c10::kStrided &&
      !impl->is_nested()) {
    const auto sizes = impl->sizes();
    const auto steps = impl->strides();
    shape = Dims(std::span<const int64_t>(sizes.data(), sizes.size()));
    strides = Dims(std::span<const int64_t>(steps.data(), steps.size()));
  }
  retain(impl);  // the handle owns this reference
  return Tensor(nullptr, std::move(shape), std::move(strides), from_aten(t.scalar_type()),
                device, SourceHandle::adopt(&kTorchOpaqueHandleOps, impl));
}

}  // namespace infini::ops::torch_bridge

// The observation's question (core/observe.h), answered in the library.
namespace infini::ops::observe {
bool reuses_handle(const Tensor& t) noexcept {
  return torch_bridge::reusable_impl(t) != nullptr;
}
}  // namespace infini::ops::observe
