#pragma once
// Tensor arguments of the generated bindings, Python -> core: Tensor,
// Tensor[] and Tensor?[] (their kinds: arg_kinds.h). Only Python.h and the
// core: the bindings TU stays free of torch's headers; the converters are in
// unpack_tensors.cpp.

#include <optional>
#include <span>

#include "core/core.h"
#include "torch/signature.h"
#include "torch/small_list.h"

namespace infini::ops::torch_bridge {

// Storage of the list kinds: a few items inline, no heap allocation for
// usual lengths; each converts to the span the library's API takes.
class TensorListArg {
 public:
  SmallList<Tensor, 4> items;
  operator std::span<const Tensor>() const { return {items.data(), items.size()}; }
  operator std::span<Tensor>() { return {items.data(), items.size()}; }
};

class OptionalTensorListArg {
 public:
  SmallList<std::optional<Tensor>, 4> items;
  operator std::span<const std::optional<Tensor>>() const {
    return {items.data(), items.size()};
  }
};

// The converters (unpack_tensors.cpp). borrow: a tensor's handle holds no
// reference (the argument's Python object keeps it alive for the call); list
// elements always own theirs.
Tensor unpack_tensor(PyObject* obj, const Signature& sig, int i, bool borrow);
TensorListArg unpack_tensor_list(PyObject* obj, const Signature& sig, int i);
OptionalTensorListArg unpack_tensor_opt_list(PyObject* obj, const Signature& sig, int i);

}  // namespace infini::ops::torch_bridge
