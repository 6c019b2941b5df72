#pragma once
// Whether a Python call takes the lane (torch/lane.h): its tensors
// (lane_tensors) and its other arguments (lane_allows). Only Python.h and the
// core: the bindings TU stays free of torch's headers; the tensors' check is
// in lane_checks.cpp.

#include "core/core.h"
#include "torch/lane.h"
#include "torch/signature.h"

namespace infini::ops::torch_bridge {

// Whether the converted arguments besides the tensors allow the lane: no
// stream, and an implementation the lane serves ("torch"; or the default
// when the op has no native kernel for the CPU, since every lane tensor is a
// CPU tensor).
inline bool lane_allows(Implementation impl, Stream stream, bool default_is_aten) noexcept {
  return !stream &&
         (impl == Implementation::kTorch || (default_is_aten && impl == Implementation::kDefault));
}

// Fills refs (one per tensor parameter, in parameter order) and lists (one
// per tensor-list parameter, elements stored in items, kLaneListItems at
// most) and returns true when every tensor argument is exactly a
// torch.Tensor that ATen's CPU
// kernels take as it is (dense, with storage, no functionality key beyond
// autograd and autocast, not an inference tensor, not requiring grad, not a
// forward-AD dual, of a dtype the library holds), handle reuse is on, and
// the call may keep the GIL: fewer than 32,768 elements in all (ATen's grain
// size: no intra-op parallelism below it) and either an op whose kernel's
// loops see only raw pointers (Signature::borrow_tensors) or one intra-op
// thread, so that no other thread can need the GIL to copy a borrowed
// tensor while this one holds it. False: the general path runs the call.
bool lane_tensors(const Signature& sig, PyObject* const* slots, void** refs,
                  TensorListRef* lists = nullptr, void** items = nullptr) noexcept;

}  // namespace infini::ops::torch_bridge
