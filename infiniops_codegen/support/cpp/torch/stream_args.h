#pragma once
// `stream=` of the generated bindings: Python -> core Stream. Kept apart from
// the other converters; free of ATen and vendor headers, so it compiles the same for
// every platform (which stream guard applies is decided at dispatch, by the
// tensors' device: generated/stream_guards.cpp).

#include "core/core.h"
#include "torch/signature.h"

namespace infini::ops::torch_bridge {

// The slow path: an int is a raw native handle (0 is a real stream: CUDA's
// default stream); an object holding one in one of `attributes` (nullptr-
// terminated: "cuda_stream", ...) gives that handle; anything else is a
// TypeError naming the op and the accepted forms.
Stream stream_from_object(PyObject* obj, const Signature& sig, int i,
                          const char* const* attributes);

// stream=None or absent: no stream (the framework's current one), for the
// price of one comparison.
inline Stream stream_arg(PyObject* obj, const Signature& sig, int i,
                         const char* const* attributes) {
  if (obj == nullptr || obj == Py_None) [[likely]] {
    return Stream{};
  }
  return stream_from_object(obj, sig, i, attributes);
}

}  // namespace infini::ops::torch_bridge
