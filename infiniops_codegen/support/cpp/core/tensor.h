#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_TENSOR_H_
#define INFINI_OPS_CORE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "core/data_type.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle.h"
#include "core/small_dims.h"

namespace infini::ops {

// A non-owning strided view of device memory plus, optionally, an owning
// handle to the framework tensor it was made from. The handle lets the torch
// fallback reuse the original at::Tensor instead of rebuilding one per call.
//
// Invariant: the handle, when present, describes exactly this tensor's data,
// shape, strides, dtype and device. Every derivation below changes some of
// that metadata, so derived tensors carry no handle (reusing it would compute
// on the source's geometry) and take the raw-pointer path instead.
class Tensor {
 public:
  Tensor(void* data, Dims shape, Dims strides, DataType dtype, Device device,
         SourceHandle handle = {})
      : data_(data),
        shape_(std::move(shape)),
        strides_(std::move(strides)),
        dtype_(dtype),
        device_(device),
        handle_(std::move(handle)) {
    validate();
  }

  // The same from the shape and strides as spans, copied straight into
  // place (no temporary Dims): how a bridge describes a framework tensor.
  Tensor(void* data, std::span<const int64_t> shape,
         std::span<const int64_t> strides, DataType dtype, Device device,
         SourceHandle handle = {})
      : data_(data),
        shape_(shape),
        strides_(strides),
        dtype_(dtype),
        device_(device),
        handle_(std::move(handle)) {
    validate();
  }

  // Row-major (C-contiguous) strides for shape.
  static Tensor contiguous(void* data, Dims shape, DataType dtype,
                           Device device) {
    Dims strides = contiguous_strides(shape);
    return Tensor(data, std::move(shape), std::move(strides), dtype, device);
  }

  void* data() const noexcept { return data_; }
  const Dims& shape() const noexcept { return shape_; }
  const Dims& strides() const noexcept { return strides_; }
  DataType dtype() const noexcept { return dtype_; }
  Device device() const noexcept { return device_; }
  std::size_t element_size() const noexcept {
    return ::infini::ops::element_size(dtype_);
  }

  int64_t ndim() const noexcept { return static_cast<int64_t>(shape_.size()); }

  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int64_t size : shape_) n *= size;
    return n;
  }

  // dim may be negative (counted from the end); IndexError when out of range.
  int64_t size(int64_t dim) const { return shape_[wrap_dim(dim)]; }
  int64_t stride(int64_t dim) const { return strides_[wrap_dim(dim)]; }

  // PyTorch's definition: strides of size-1 dims do not matter, and a tensor
  // without elements is contiguous.
  bool is_contiguous() const noexcept {
    int64_t expected = 1;
    for (std::size_t i = shape_.size(); i-- > 0;) {
      if (shape_[i] == 0) return true;
      if (shape_[i] == 1) continue;
      if (strides_[i] != expected) return false;
      expected *= shape_[i];
    }
    return true;
  }

  const SourceHandle& handle() const noexcept { return handle_; }
  bool has_handle() const noexcept { return static_cast<bool>(handle_); }

  // False when the library must not touch this tensor's memory (an opaque
  // handle, see handle.h: a fake or meta tensor, a functorch wrapper, a call
  // under a framework mode, ...). data() is then null and only the framework
  // may compute on the tensor: native kernels and the from_blob path never
  // see it, and derivations below refuse it.
  bool addressable() const noexcept { return !handle_.opaque(); }

  // The library wrote this tensor's memory itself (a native kernel): tell its
  // framework, as the framework's own operations would (torch: the tensor's
  // version counter goes up, so autograd refuses stale saved tensors).
  void mark_written() const { handle_.written(); }

  // Python slicing semantics along dim: negative start/end count from the
  // end, both are clamped, step must be positive (ValueError otherwise). Pass
  // INT64_MAX as end for "to the end".
  Tensor slice(int64_t dim, int64_t start, int64_t end,
               int64_t step = 1) const {
    require_addressable("slice");
    const std::size_t d = wrap_dim(dim);
    if (step <= 0) {
      throw ValueError("slice: step must be positive, got " +
                       std::to_string(step));
    }
    const int64_t n = shape_[d];
    start = clamp_index(start, n);
    end = clamp_index(end, n);
    const int64_t length = end > start ? (end - start + step - 1) / step : 0;
    Dims shape = shape_;
    Dims strides = strides_;
    shape[d] = length;
    strides[d] = strides_[d] * step;
    return Tensor(advance(start * strides_[d]), std::move(shape),
                  std::move(strides), dtype_, device_);
  }

  Tensor transpose(int64_t dim0, int64_t dim1) const {
    require_addressable("transpose");
    const std::size_t d0 = wrap_dim(dim0);
    const std::size_t d1 = wrap_dim(dim1);
    Dims shape = shape_;
    Dims strides = strides_;
    std::swap(shape[d0], shape[d1]);
    std::swap(strides[d0], strides[d1]);
    return Tensor(data_, std::move(shape), std::move(strides), dtype_, device_);
  }

  // Reinterprets a contiguous tensor with a new shape (at most one -1, which
  // is inferred). ValueError for a non-contiguous tensor or a size mismatch.
  Tensor view(Dims new_shape) const {
    require_addressable("view");
    if (!is_contiguous()) {
      throw ValueError("view: tensor is not contiguous");
    }
    std::size_t infer_at = new_shape.size();
    int64_t known = 1;
    for (std::size_t i = 0; i < new_shape.size(); ++i) {
      if (new_shape[i] == -1) {
        if (infer_at != new_shape.size()) {
          throw ValueError("view: only one dimension can be inferred");
        }
        infer_at = i;
      } else if (new_shape[i] < 0) {
        throw ValueError("view: invalid shape dimension " +
                         std::to_string(new_shape[i]));
      } else {
        known *= new_shape[i];
      }
    }
    const int64_t total = numel();
    if (infer_at != new_shape.size()) {
      if (known == 0 || total % known != 0) {
        throw ValueError("view: shape is invalid for input of size " +
                         std::to_string(total));
      }
      new_shape[infer_at] = total / known;
    } else if (known != total) {
      throw ValueError("view: shape is invalid for input of size " +
                       std::to_string(total));
    }
    return contiguous(data_, std::move(new_shape), dtype_, device_);
  }

  // PyTorch expand: new leading dims may be added, size-1 dims broadcast with
  // stride 0, -1 keeps an existing size. ValueError otherwise.
  Tensor expand(Dims sizes) const {
    require_addressable("expand");
    const std::size_t n = sizes.size();
    const std::size_t old_n = shape_.size();
    if (n < old_n) {
      throw ValueError("expand: got " + std::to_string(n) +
                       " sizes for a tensor with " + std::to_string(old_n) +
                       " dims");
    }
    Dims strides(n);
    for (std::size_t i = n; i-- > 0;) {
      const std::size_t offset = n - 1 - i;
      const bool existing = offset < old_n;
      const std::size_t old_d = old_n - 1 - offset;
      int64_t size = existing ? shape_[old_d] : 1;
      int64_t stride = existing    ? strides_[old_d]
                       : i + 1 < n ? sizes[i + 1] * strides[i + 1]
                                   : 1;
      int64_t target = sizes[i];
      if (target == -1) {
        if (!existing) {
          throw ValueError("expand: -1 is not allowed for a new leading dim");
        }
        target = size;
      } else if (target < 0) {
        throw ValueError("expand: invalid size " + std::to_string(target));
      }
      if (size != target) {
        if (size != 1) {
          throw ValueError("expand: size " + std::to_string(size) + " at dim " +
                           std::to_string(old_d) + " cannot be expanded to " +
                           std::to_string(target));
        }
        stride = 0;
      }
      sizes[i] = target;
      strides[i] = stride;
    }
    return Tensor(data_, std::move(sizes), std::move(strides), dtype_, device_);
  }

  // Same geometry, data moved by a (possibly negative) number of elements.
  Tensor offset(int64_t elements) const {
    require_addressable("offset");
    return Tensor(advance(elements), shape_, strides_, dtype_, device_);
  }

 private:
  void validate() const {
    if (shape_.size() != strides_.size()) {
      throw ValueError("Tensor: shape has " + std::to_string(shape_.size()) +
                       " dims but strides has " +
                       std::to_string(strides_.size()));
    }
    for (int64_t size : shape_) {
      if (size < 0) {
        throw ValueError("Tensor: negative size " + std::to_string(size));
      }
    }
  }

  void require_addressable(const char* what) const {
    if (!addressable()) {
      throw ValueError(std::string(what) +
                       ": this tensor has no memory the library can address "
                       "(it came from a framework mode, a fake, meta or wrapped "
                       "tensor); derive it in its framework instead");
    }
  }

  static Dims contiguous_strides(const Dims& shape) {
    Dims strides(shape.size());
    int64_t step = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
      strides[i] = step;
      step *= shape[i] > 1 ? shape[i] : 1;
    }
    return strides;
  }

  static int64_t clamp_index(int64_t index, int64_t size) noexcept {
    if (index < 0) index += size;
    if (index < 0) return 0;
    return index > size ? size : index;
  }

  std::size_t wrap_dim(int64_t dim) const {
    const int64_t n = ndim();
    const int64_t wrapped = dim < 0 ? dim + n : dim;
    if (wrapped < 0 || wrapped >= n) {
      throw IndexError("Dimension out of range (expected to be in range of [" +
                       std::to_string(-n) + ", " + std::to_string(n - 1) +
                       "], but got " + std::to_string(dim) + ")");
    }
    return static_cast<std::size_t>(wrapped);
  }

  // Never offsets a null pointer (undefined behaviour even by zero bytes in
  // some readings); an empty tensor may legitimately have no data.
  void* advance(int64_t elements) const noexcept {
    if (data_ == nullptr) return nullptr;
    return static_cast<std::byte*>(data_) +
           elements * static_cast<int64_t>(element_size());
  }

  void* data_;
  Dims shape_;
  Dims strides_;
  DataType dtype_;
  Device device_;
  SourceHandle handle_;
};

}  // namespace infini::ops

#endif  // INFINI_OPS_CORE_TENSOR_H_
