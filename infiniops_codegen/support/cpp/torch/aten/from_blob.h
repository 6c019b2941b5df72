#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_FROM_BLOB_H_
#define INFINI_OPS_TORCH_ATEN_FROM_BLOB_H_
// The from_blob path: an at::Tensor made over a core Tensor's memory, for
// tensors without a torch handle, and the per-thread pool of such wrappers.
// Part of the library's ATen conversions (torch/aten_convert.h).

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>

#include "core/core.h"

namespace infini::ops::torch_bridge {

// The from_blob path, for tensors without a torch handle (made in C++, or
// derived with different metadata): a fresh at::Tensor on t's memory (a
// TensorImpl, a non-owning resizable Storage, a version counter).
at::Tensor from_blob(const Tensor& t);

// The same through the calling thread's wrapper pool: a wrapper of an earlier
// call, re-bound to t's memory, geometry and dtype (no allocation), or a
// fresh one when the pool holds none for t's dtype and device. give_back
// returns it after the call, unless ATen still references it or its storage
// (then it is left to its holders and never re-bound), it gained autograd or
// Python state, or the pool is full. Re-binding also undoes whatever ATen did
// to it (a resize, a new storage size): each call starts from the caller's
// geometry. Off (g_wrapper_pool false): a fresh one per call, let go after
// it. One pool per thread: no locks, and a wrapper is re-bound only by the
// thread holding the pool's only reference. Wrappers are keyed by the core
// dtype and device they were made for (wrapper_key).
#ifdef INFINI_OPS_LIBRARY_LINK
inline namespace module_side {
extern std::atomic<bool>& g_wrapper_pool;
}  // namespace module_side
#else
extern std::atomic<bool> g_wrapper_pool;
#endif
at::Tensor pooled_from_blob(const Tensor& t);
void give_back(at::Tensor&& wrapper, uint32_t key) noexcept;
// The index of the device a device tensor's memory is on, as the backend's
// getDeviceFromPtr says (-1 when it cannot tell): where a tensor made in C++
// with index -1, "the current device", is placed.
int16_t index_of_data(const Tensor& t) noexcept;
inline uint32_t wrapper_key(const Tensor& t) noexcept {
  int16_t index = t.device().index;
  if (index < 0 && t.device().type != DeviceType::kCpu) [[unlikely]] index = index_of_data(t);
  return static_cast<uint32_t>(static_cast<uint8_t>(t.dtype())) |
         static_cast<uint32_t>(static_cast<uint8_t>(t.device().type)) << 8 |
         static_cast<uint32_t>(static_cast<uint16_t>(index)) << 16;
}

// The calling thread's pool so far (a test and benchmark hook).
struct WrapperPoolStats {
  uint64_t rebound = 0;  // wrappers taken from the pool and re-bound
  uint64_t fresh = 0;    // wrappers made (the pool had none to offer)
  uint64_t kept = 0;     // given back and kept for the next call
  uint64_t dropped = 0;  // given back but not kept (still referenced, full, off)
  int pooled = 0;        // wrappers in the pool now
};
WrapperPoolStats wrapper_pool_stats() noexcept;
// Drops the calling thread's pooled wrappers (and its counts).
void clear_wrapper_pool() noexcept;

// A wrapper still has t's sizes and strides (ATen may have resized or
// restrided it: output_checks.h).
bool same_sizes_and_strides(const c10::TensorImpl* impl, const Tensor& t) noexcept;

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_FROM_BLOB_H_
