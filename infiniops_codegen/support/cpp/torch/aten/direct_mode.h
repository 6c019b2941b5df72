#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_DIRECT_MODE_H_
#define INFINI_OPS_TORCH_ATEN_DIRECT_MODE_H_
// Direct kernel mode: at::cpu::<op>_out called without the c10 dispatcher
// where the dispatcher would do nothing else. Part of the library's ATen
// conversions (torch/aten_convert.h).

#include <ATen/core/Tensor.h>

#include <atomic>
#include <optional>

#include "torch/aten/tensor_args.h"

namespace infini::ops::torch_bridge {

// Direct kernel mode: call at::cpu::<op>_out without the c10 dispatcher
// when that is what the dispatcher would do anyway: every tensor a plain,
// dense CPU tensor (no subclass, mode or functionalisation key, no opaque
// handle), no thread-local keys included (autocast, vmap, ...), no Python
// dispatch mode, no tensor that requires grad (ATen's autograd kernel must
// see those), and no profiler or other RecordFunction observer listening
// (the dispatcher records the op for it, exactly as for torch's own call).
#ifdef INFINI_OPS_LIBRARY_LINK
inline namespace module_side {
extern std::atomic<bool>& g_direct_mode;
}  // namespace module_side
#else
extern std::atomic<bool> g_direct_mode;
#endif

inline bool direct_cpu_tensor(const at::Tensor& t) {
  constexpr c10::DispatchKeySet kIgnored =
      c10::DispatchKeySet({c10::DispatchKey::ADInplaceOrView, c10::DispatchKey::AutogradCPU,
                           c10::DispatchKey::AutocastCPU});
  return (t.key_set() - kIgnored) == c10::DispatchKeySet(c10::DispatchKey::CPU) &&
         !t.is_inference() && !t.requires_grad();  // autograd: the dispatcher's
}
inline bool direct_cpu_tensor(const std::optional<at::Tensor>& t) {
  return !t || direct_cpu_tensor(*t);
}
inline bool direct_cpu_tensor(const AtenTensor& t) {
  return !t.dispatch_only() && direct_cpu_tensor(t.get());
}
inline bool direct_cpu_tensor(const AtenOptionalTensor& t) {
  return !t.dispatch_only() && direct_cpu_tensor(t.get());
}

// No TLS-included keys, no Python dispatch mode, no RecordFunction observer.
bool direct_cpu_context();

template <class... T>
bool direct_cpu(const T&... tensors) {
  return g_direct_mode.load(std::memory_order_relaxed) &&
         (direct_cpu_tensor(tensors) && ...) && direct_cpu_context();
}

// The same on the lane, whose tensors lane_tensors (torch/lane_checks.h) found
// plain dense CPU tensors that do not require grad: only the call's context
// is left to check.
[[gnu::always_inline]] inline bool direct_lane() {
  return g_direct_mode.load(std::memory_order_relaxed) && direct_cpu_context();
}

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_DIRECT_MODE_H_
