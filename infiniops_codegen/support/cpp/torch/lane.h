#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_LANE_H_
#define INFINI_OPS_TORCH_LANE_H_
// The lane: a Python call whose tensors ATen can take exactly as they
// arrived skips the core Tensor altogether. Each tensor argument is passed
// to the fallback wrapper as the TensorImpl of the caller's torch.Tensor
// (borrowed: the argument objects keep them alive), which the wrapper hands
// to the same ATen call the general path makes. Taken only where the general
// path would reuse every handle and run ATen on them (no native kernel, no
// from_blob stand-in, no stream), and only where the GIL may stay held for
// the whole call (lane_tensors): then nothing about the call differs from
// the general path but the work it skips. Free of torch's and Python's
// headers; the checks are in lane_checks.h.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace infini::ops::torch_bridge {

// Off: every call takes the general path (to test and benchmark it with
// handles in the same process). Like the other switches, not meant to be
// flipped while other threads call ops.
extern std::atomic<bool> g_lane;
// Calls that took the lane (a test hook); counted with the GIL held.
extern uint64_t g_lane_calls;

// A tensor argument on the lane: a c10::TensorImpl* the caller keeps alive.
struct TensorRef {
  void* impl;
};
// A `Tensor?` argument on the lane: null for None.
struct OptionalTensorRef {
  void* impl;
};
// A `Tensor[]` input on the lane: its elements' TensorImpls, which the
// caller's list keeps alive (the GIL, held for the whole lane call, keeps
// any other thread from changing the list).
struct TensorListRef {
  void* const* impls;
  std::size_t size;
};

// How many list elements a lane call takes in all (the binding's storage);
// a call with more takes the general path.
inline constexpr std::size_t kLaneListItems = 16;

// The outputs of a call without out=, from the fallback that makes them
// (as at::Tensors) to the binding that returns them (as Python tensors):
// TensorImpls with one reference each, dropped when nobody took them.
class Results {
 public:
  static constexpr int kMax = 8;
  Results() = default;
  ~Results();  // torch/aten/results.cpp
  void clear();  // drops them all
  Results(const Results&) = delete;
  Results& operator=(const Results&) = delete;

  void* impls[kMax] = {};
  int count = 0;
};

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_LANE_H_
