#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_TENSOR_ARGS_H_
#define INFINI_OPS_TORCH_ATEN_TENSOR_ARGS_H_
// A fallback wrapper's tensor arguments as at::Tensors for one ATen call:
// the caller's own TensorImpl where its handle may be reused (handles.h),
// else a from_blob wrapper (from_blob.h); single tensors, optional ones and
// tensor lists, the lane's included (torch/lane.h). Part of the library's
// ATen conversions (torch/aten_convert.h).

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>

#include "core/core.h"
#include "torch/aten/from_blob.h"
#include "torch/aten/handles.h"
#include "torch/lane.h"

namespace infini::ops::torch_bridge {

// An at::Tensor on impl that holds no reference: release it with
// unsafeReleaseTensorImpl(), never let it decref.
//
// always_inline here and on the borrowed conversions and their destructors
// (the lane's whole per-tensor work): in a shard of dozens of wrappers GCC's
// unit-growth limit otherwise leaves them as out-of-line calls (callgrind:
// 8-10 instructions per tensor per call). The limit (--param
// inline-unit-growth) cannot simply be raised: a precompiled header fixes
// the parameters its TUs are compiled with.
[[gnu::always_inline]] inline at::Tensor unowned(c10::TensorImpl* impl) noexcept {
  return at::Tensor(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim(impl));
}

// The at::Tensor of one argument for the duration of one ATen call. With a
// torch handle it *borrows* the TensorImpl the tensor arrived with: no
// refcount traffic at all (a second strong reference would also make torch
// incref and decref the Python object, taking the GIL through pybind11, on
// every call). The core Tensor, which outlives the call, keeps it alive.
// Without a handle it owns a from_blob tensor.
// dispatch_only: the tensor must reach ATen through the dispatcher (its
// handle is opaque), never through a direct at::cpu:: call.
class AtenTensor {
 public:
  struct Pooled {};  // a wrapper of the pool: given back when done
  [[gnu::always_inline]] explicit AtenTensor(c10::TensorImpl* borrowed,
                                             bool dispatch_only = false) noexcept
      : tensor_(unowned(borrowed)), dispatch_only_(dispatch_only) {}
  AtenTensor(Pooled, at::Tensor&& wrapper, uint32_t key) noexcept
      : tensor_(std::move(wrapper)), pooled_(true), key_(key) {}
  // A borrowed tensor holds no reference: nothing to release (the union
  // skips at::Tensor's destructor). A pooled one is given back out of line:
  // inlined into every wrapper, that code doubled a shard's size.
  [[gnu::always_inline]] ~AtenTensor() {
    if (pooled_) [[unlikely]] release();
  }
  AtenTensor(const AtenTensor&) = delete;
  AtenTensor& operator=(const AtenTensor&) = delete;

  operator at::Tensor&() noexcept { return tensor_; }
  operator const at::Tensor&() const noexcept { return tensor_; }
  at::Tensor& get() noexcept { return tensor_; }
  const at::Tensor& get() const noexcept { return tensor_; }
  bool dispatch_only() const noexcept { return dispatch_only_; }
  // A wrapper of the from_blob path (the pool's), not the caller's tensor.
  bool from_blob() const noexcept { return pooled_; }
  // From_blob path, in place: this output is the very tensor another
  // argument of the call was converted to `same` from. Gives this one's
  // wrapper back and borrows that one (no reference: both are locals of one
  // wrapper call, neither used once the first goes), so that ATen sees one
  // tensor where the caller passed one, as it does on the reuse path.
  void share(const at::Tensor& same) noexcept;

 private:
  void release() noexcept;  // give_back
  union {
    at::Tensor tensor_;
  };
  bool pooled_ = false;
  bool dispatch_only_ = false;
  uint32_t key_ = 0;  // kPooled: wrapper_key of the tensor it was made for
};

inline AtenTensor to_aten(const Tensor& t) {
  if (c10::TensorImpl* impl = reusable_impl(t)) [[likely]] {
    return AtenTensor(impl, t.handle().opaque());
  }
  return AtenTensor(AtenTensor::Pooled{}, pooled_from_blob(t), wrapper_key(t));
}

// A tensor on the lane (lane.h): the caller's own TensorImpl, borrowed.
[[gnu::always_inline]] inline AtenTensor to_aten(TensorRef t) noexcept {
  return AtenTensor(static_cast<c10::TensorImpl*>(t.impl));
}

// An owning at::Tensor, for containers ATen copies anyway (tensor lists):
// list elements always arrive with owning handles (see torch/unpack_tensors.cpp), so
// this increment never makes torch touch the Python object.
inline at::Tensor to_aten_owned(const Tensor& t) {
  if (c10::TensorImpl* impl = reusable_impl(t)) [[likely]] {
    return at::Tensor(
        c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim_copy(impl));
  }
  return from_blob(t);
}

// The same for `Tensor?` parameters.
class AtenOptionalTensor {
 public:
  AtenOptionalTensor() noexcept : tensor_() {}
  [[gnu::always_inline]] explicit AtenOptionalTensor(c10::TensorImpl* borrowed,
                                                     bool dispatch_only = false) noexcept
      : tensor_(unowned(borrowed)), borrowed_(true), dispatch_only_(dispatch_only) {}
  AtenOptionalTensor(AtenTensor::Pooled, at::Tensor&& wrapper, uint32_t key) noexcept
      : tensor_(std::move(wrapper)), pooled_(true), key_(key) {}
  // Borrowed or empty: nothing to release (as AtenTensor's).
  [[gnu::always_inline]] ~AtenOptionalTensor() {
    if (pooled_) [[unlikely]] release();
  }
  AtenOptionalTensor(const AtenOptionalTensor&) = delete;
  AtenOptionalTensor& operator=(const AtenOptionalTensor&) = delete;

  operator const std::optional<at::Tensor>&() const noexcept { return tensor_; }
  const std::optional<at::Tensor>& get() const noexcept { return tensor_; }
  bool dispatch_only() const noexcept { return dispatch_only_; }
  bool from_blob() const noexcept { return pooled_; }

 private:
  void release() noexcept;  // pooled: give_back
  union {
    std::optional<at::Tensor> tensor_;
  };
  bool borrowed_ = false;
  bool pooled_ = false;
  bool dispatch_only_ = false;
  uint32_t key_ = 0;
};

inline AtenOptionalTensor to_aten(const std::optional<Tensor>& t) {
  if (!t) return AtenOptionalTensor();
  if (c10::TensorImpl* impl = reusable_impl(*t)) [[likely]] {
    return AtenOptionalTensor(impl, t->handle().opaque());
  }
  return AtenOptionalTensor(AtenTensor::Pooled{}, pooled_from_blob(*t), wrapper_key(*t));
}

[[gnu::always_inline]] inline AtenOptionalTensor to_aten(OptionalTensorRef t) noexcept {
  if (t.impl == nullptr) return AtenOptionalTensor();
  return AtenOptionalTensor(static_cast<c10::TensorImpl*>(t.impl));
}

// A tensor list on the lane: at::Tensors on the caller's TensorImpls that
// hold no reference (released without a decref, as AtenTensor's).
class AtenBorrowedList {
 public:
  explicit AtenBorrowedList(TensorListRef list) {
    items.reserve(list.size);
    for (std::size_t k = 0; k < list.size; ++k) {
      items.push_back(unowned(static_cast<c10::TensorImpl*>(list.impls[k])));
    }
  }
  ~AtenBorrowedList() {
    for (at::Tensor& t : items) (void)t.unsafeReleaseTensorImpl();
  }
  AtenBorrowedList(const AtenBorrowedList&) = delete;
  AtenBorrowedList& operator=(const AtenBorrowedList&) = delete;
  operator at::TensorList() const { return items; }
  operator at::ITensorListRef() const { return at::TensorList(items); }

  c10::SmallVector<at::Tensor, kLaneListItems> items;
};

inline AtenBorrowedList to_aten(TensorListRef list) { return AtenBorrowedList(list); }

// Holds converted tensors and converts to each list parameter type ATen
// uses. Elements on the from_blob path are the pool's (the first 64; marked
// in `pooled`, their keys in `keys`), given back when the list goes.
class AtenTensorList {
 public:
  AtenTensorList() = default;
  AtenTensorList(AtenTensorList&& other) noexcept
      : items(std::move(other.items)),
        keys(std::move(other.keys)),
        pooled(std::exchange(other.pooled, 0)) {}
  AtenTensorList& operator=(AtenTensorList&&) = delete;
  ~AtenTensorList() {
    for (std::size_t k = 0; pooled != 0 && k < items.size() && k < 64; ++k) {
      if (pooled & (uint64_t{1} << k)) give_back(std::move(items[k]), keys[k]);
    }
  }
  operator at::TensorList() const { return items; }
  operator at::ITensorListRef() const { return at::TensorList(items); }

  c10::SmallVector<at::Tensor, 8> items;
  c10::SmallVector<uint32_t, 8> keys;  // parallel to items where pooled
  uint64_t pooled = 0;
};

inline AtenTensorList to_aten(std::span<const Tensor> ts) {
  AtenTensorList list;
  list.items.reserve(ts.size());
  for (const Tensor& t : ts) {
    if (c10::TensorImpl* impl = reusable_impl(t)) [[likely]] {
      list.items.push_back(at::Tensor(
          c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim_copy(impl)));
    } else if (list.items.size() < 64) {
      list.keys.resize(list.items.size() + 1);
      list.keys.back() = wrapper_key(t);
      list.pooled |= uint64_t{1} << list.items.size();
      list.items.push_back(pooled_from_blob(t));
    } else {
      list.items.push_back(from_blob(t));
    }
  }
  return list;
}
inline AtenTensorList to_aten(std::span<Tensor> ts) {
  return to_aten(std::span<const Tensor>(ts));
}

inline c10::List<std::optional<at::Tensor>> to_aten(
    std::span<const std::optional<Tensor>> ts) {
  c10::List<std::optional<at::Tensor>> list;
  list.reserve(ts.size());
  for (const auto& t : ts) {
    list.push_back(t ? std::optional<at::Tensor>(to_aten_owned(*t)) : std::nullopt);
  }
  return list;
}

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_TENSOR_ARGS_H_
