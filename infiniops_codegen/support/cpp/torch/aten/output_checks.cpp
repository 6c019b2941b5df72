// Overlapping, resized and moved outputs; written tensors' versions
// (output_checks.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/output_checks.h"

#include <ATen/ops/copy.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>

#include "torch/aten/from_blob.h"
#include "torch/aten/handles.h"

namespace infini::ops::torch_bridge {

void check_rebuilt_output(const Tensor& t, const at::Tensor& a, const char* op,
                          const char* name) {
  const c10::TensorImpl* impl = a.unsafeGetTensorImpl();
  if (!same_sizes_and_strides(impl, t)) [[unlikely]] output_not_resizable(t, a, op, name);
  if (impl->numel() != 0) {
    const auto* data = static_cast<const std::byte*>(impl->unsafe_storage().data()) +
                       impl->storage_offset() * static_cast<int64_t>(impl->itemsize());
    if (data != t.data()) [[unlikely]] copy_back_moved_output(t, a);
  }
  if (t.has_handle()) propagate_writes(t, a);
}

void propagate_writes(const Tensor& t, const at::Tensor& a) {
  // Stand-ins are normal tensors (make_wrapper) and count their writes; a
  // counter that is off (a stand-in made otherwise) means one write.
  const auto& counter = a.unsafeGetTensorImpl()->version_counter();
  t.handle().written(counter.enabled() ? static_cast<int64_t>(counter.current_version()) : 1);
}

void copy_back_moved_output(const Tensor& t, const at::Tensor& a) {
  // Same geometry, new memory: ATen grew the storage and shrank it back.
  from_blob(t).copy_(a);
}

namespace {

std::string shape_string(at::IntArrayRef sizes) {
  std::string text = "[";
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    text += (k ? ", " : "") + std::to_string(sizes[k]);
  }
  return text + "]";
}

}  // namespace

namespace {

// [first, last) bytes a tensor can touch; empty for zero elements.
[[gnu::always_inline]] inline std::pair<uintptr_t, uintptr_t> byte_range(const Tensor& t) {
  intptr_t lo = 0;
  intptr_t hi = 0;
  const int64_t* shape = t.shape().data();
  const int64_t* strides = t.strides().data();
  for (std::size_t d = 0, n = t.shape().size(); d < n; ++d) {
    if (shape[d] == 0) return {0, 0};
    const intptr_t span = static_cast<intptr_t>(shape[d] - 1) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  const auto item = static_cast<intptr_t>(t.element_size());
  const auto base = reinterpret_cast<intptr_t>(t.data());
  return {static_cast<uintptr_t>(base + lo * item),
          static_cast<uintptr_t>(base + (hi + 1) * item)};
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.data() == b.data() && a.dtype() == b.dtype() && a.shape() == b.shape() &&
         a.strides() == b.strides();
}

// One tensor of the caller's, converted twice: the same torch tensor (one
// handle), or, for tensors made in C++ (no handle), the same memory, dtype,
// shape, strides and device.
bool same_tensor(const Tensor& a, const Tensor& b) {
  const bool a_torch = is_torch_handle(a.handle());
  if (a_torch != is_torch_handle(b.handle())) return false;
  if (a_torch) return a.handle().get() == b.handle().get();
  return same_view(a, b) && a.device() == b.device();
}

}  // namespace

void check_overlap(const char* op, std::initializer_list<OverlapOutput> outs,
                   std::initializer_list<OverlapInput> ins) {
  auto overlaps = [](std::pair<uintptr_t, uintptr_t> a, const Tensor& b) {
    const auto [b_lo, b_hi] = byte_range(b);
    return a.first < a.second && b_lo < b_hi && a.first < b_hi && b_lo < a.second;
  };
  for (auto o = outs.begin(); o != outs.end(); ++o) {
    const auto range = byte_range(o->core);
    const bool empty = range.first >= range.second;
    bool shared = false;
    for (const OverlapInput& in : ins) {
      if (in.core == nullptr) continue;
      const bool overlapping = overlaps(range, *in.core);
      if (overlapping && !same_view(o->core, *in.core)) {
        throw Error(std::string(op) +
                    "(): unsupported operation: some elements of the input tensor and "
                    "the written-to tensor refer to a single memory location. Please "
                    "clone() the tensor before performing the operation.");
      }
      // In place on the from_blob path: one at::Tensor for the output and
      // the input it is (only a tensor sharing its memory, or an empty one,
      // can be; the outputs do not overlap each other: one share at most).
      if (!shared && (overlapping || empty) && o->aten.from_blob() && in.from_blob &&
          same_tensor(o->core, *in.core)) {
        o->aten.share(*in.aten);
        shared = true;
      }
    }
    for (auto other = std::next(o); other != outs.end(); ++other) {
      if (overlaps(range, other->core)) {
        throw Error(std::string(op) +
                    "(): unsupported operation: two outputs refer to the same memory "
                    "location. Please pass separate output tensors.");
      }
    }
  }
}

void output_not_resizable(const Tensor& t, const at::Tensor& a, const char* op,
                          const char* name) {
  const at::IntArrayRef shape(t.shape().data(), t.shape().size());
  const at::IntArrayRef strides(t.strides().data(), t.strides().size());
  // Say what changed: the shape, or (same shape) only the strides.
  const std::string what =
      shape != a.sizes()
          ? "has shape " + shape_string(shape) + " but the result has shape " +
                shape_string(a.sizes())
          : "has strides " + shape_string(strides) + " but ATen wrote the result with strides " +
                shape_string(a.strides()) + " (shape " + shape_string(shape) + ")";
  throw OutputNotResizable(std::string(op) + "(): output '" + name + "' " + what +
                           "; this output has no PyTorch handle (from_blob path), so it "
                           "cannot be resized or restrided: pass an output of the "
                           "result's shape and layout");
}

}  // namespace infini::ops::torch_bridge
