// Outputs of calls without out= (results.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/results.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/intrusive_ptr.h>

namespace infini::ops::torch_bridge {

at::Tensor to_meta(const at::Tensor& t) {
  // A wrapped number stays the CPU scalar it is: ATen takes one beside
  // tensors of any device (and only on the CPU).
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) return t;
  // Not through the dispatcher: its Meta kernel of empty_strided may be Python.
  return at::detail::empty_strided_meta(t.sizes(), t.strides(), t.scalar_type());
}

void give_like(Results& r, const at::Tensor& meta, c10::Device device) {
  give(r, at::empty_strided(meta.sizes(), meta.strides(), meta.options().device(device)));
}

// Here, not beside the bindings: the fallbacks in this library drop them too.
Results::~Results() { clear(); }

void Results::clear() {
  for (int k = 0; k < count; ++k) {
    if (impls[k] != nullptr) c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(impls[k]));
    impls[k] = nullptr;
  }
  count = 0;
}

at::Tensor empty_meta_like(const AtenTensor& t) {
  return at::detail::empty_meta({0}, t.get().scalar_type());
}

void give_empty_like(Results& r, const at::Tensor& t) { give(r, at::empty({0}, t.options())); }

void give_like(Results& r, const AtenTensor& t) {
  give(r, at::empty(t.get().sizes(), t.get().options()));
}

}  // namespace infini::ops::torch_bridge
