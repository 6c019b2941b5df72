#pragma once
// Which path a tensor argument of a Python call may take: the lane
// (lane_tensor), the library's own paths (plain_tensor), else ATen's
// dispatcher with the original tensor; and whether a call's tensors may be
// borrowed while it keeps the GIL (may_borrow). Inline: the lane's check is
// a few instructions of every call. For the bridge's .cpp files only (it
// includes torch's headers): the converters, the lane, calls without out=.

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>

#include "torch/signature.h"
#include "torch_tables.h"

namespace infini::ops::torch_bridge {

// Whether t may take the library's own paths (native kernels, the from_blob
// path, direct ATen kernels): a plain dense tensor with storage on a backend
// the library knows, whose every use ATen's dispatcher would hand straight to
// the backend kernel. Anything else (fake, meta, functorch and functionalize
// wrappers, conj/neg bits, sparse, nested, forward-AD duals, inference
// tensors outside inference mode) is passed to ATen's dispatcher as the
// original at::Tensor, never through its data pointer. Modes (a
// TorchDispatchMode, a functorch layer) are a property of the call, not of a
// tensor: each path checks them once (torch_fallback::native_context,
// direct_cpu_context, reusable_impl).
inline bool plain_tensor(const at::Tensor& t) {
  constexpr c10::DispatchKeySet kFunctionality =
      c10::autograd_dispatch_keyset_with_ADInplaceOrView | c10::autocast_dispatch_keyset;
  const c10::DispatchKeySet rest = t.key_set() - kFunctionality;
  if (rest != c10::DispatchKeySet(c10::DispatchKey::CPU) &&
      rest != c10::DispatchKeySet(c10::DispatchKey::CUDA) &&
      rest != c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) [[unlikely]] {
    return false;
  }
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->has_storage()) [[unlikely]] return false;
  if (impl->is_inference() && !c10::InferenceMode::is_enabled()) [[unlikely]] return false;
  if (const auto* meta = static_cast<const torch::autograd::AutogradMeta*>(impl->autograd_meta());
      meta != nullptr && meta->fw_grad_ && !meta->fw_grad_->empty()) [[unlikely]] {
    return false;  // a forward-AD dual: the autograd kernel decides
  }
  return true;
}

inline bool is_dual(const at::Tensor& t) {
  const auto* meta =
      static_cast<const torch::autograd::AutogradMeta*>(t.unsafeGetTensorImpl()->autograd_meta());
  return meta != nullptr && meta->fw_grad_ && !meta->fw_grad_->empty();
}

// The c10 scalar types the library holds (tables::data_type), as a mask.
constexpr uint64_t held_scalar_types() {
  uint64_t mask = 0;
  for (int k = 0; k < static_cast<int>(c10::ScalarType::NumOptions) && k < 64; ++k) {
    bool held = true;
    (void)tables::data_type(static_cast<c10::ScalarType>(k), [&held] {
      held = false;
      return DataType{};
    });
    if (held) mask |= uint64_t{1} << k;
  }
  return mask;
}
inline constexpr uint64_t kHeldScalarTypes = held_scalar_types();

// plain_tensor and direct_cpu_tensor (torch/aten/direct_mode.h) for the lane, in a
// few instructions: exactly the keys of an ordinary dense CPU tensor outside
// inference mode (an inference tensor lacks the autograd keys; conj and neg
// bits, Python, functorch and every other wrapper add keys), with storage,
// no autograd metadata (or metadata that neither requires grad nor carries
// a tangent), and a dtype the library holds (the general path raises for
// the others).
inline bool lane_tensor(const at::Tensor& t) noexcept {
  constexpr c10::DispatchKeySet kPlainCpu =
      c10::DispatchKeySet(c10::DispatchKey::CPU) |
      c10::DispatchKeySet(c10::DispatchKey::ADInplaceOrView) |
      c10::DispatchKeySet(c10::DispatchKey::AutogradCPU);
  constexpr c10::DispatchKeySet kAutocast(c10::DispatchKey::AutocastCPU);
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if ((impl->key_set() - kAutocast) != kPlainCpu || !impl->has_storage()) [[unlikely]] {
    return false;
  }
  if (impl->autograd_meta() != nullptr && (impl->requires_grad() || is_dual(t))) [[unlikely]] {
    return false;
  }
  const auto type = static_cast<unsigned>(t.scalar_type());
  return type < 64 && ((kHeldScalarTypes >> type) & 1) != 0;
}

// Whether a call's tensors may borrow while it keeps the GIL: no intra-op
// worker can then copy one (which would need the GIL the caller holds) when
// the op's kernel loops see only raw pointers (Signature::borrow_tensors) or
// there is one intra-op thread (call.h).
inline bool may_borrow(const Signature& sig) {
  return sig.borrow_tensors || at::get_num_threads() == 1;
}

}  // namespace infini::ops::torch_bridge
