#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_CONVERT_H_
#define INFINI_OPS_TORCH_ATEN_CONVERT_H_
// Core -> ATen conversions for the generated fallback wrappers. Only light
// ATen headers: wrapper TUs compile under TORCH_ASSERT_ONLY_METHOD_OPERATORS.

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/util/OptionalArrayRef.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <atomic>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "core/core.h"
#include "core/observe.h"
#include "torch/lane.h"

namespace infini::ops::torch_bridge {

// The handle ops of tensors that came from torch; a handle of another
// framework is never reinterpreted as an at::Tensor. Owning handles hold one
// reference to the TensorImpl; borrowed ones (tensor arguments of a Python
// call, whose objects the caller keeps alive) hold none, and their copies own.
// Opaque ones (owning) mark tensors that only ATen's dispatcher may see: not
// a plain dense tensor with storage (fake, meta, functorch, conj/neg bits,
// forward-AD duals, ...), one that requires grad, or any tensor while a
// TorchDispatchMode is active. All share the framework tag kTorchFramework.
#ifdef INFINI_OPS_LIBRARY_LINK
// In the Python module: the library's own, through its link (library_link.h).
// Another name (module_side) than the library's objects: the two are not the
// same variable (AddressSanitizer's ODR check holds them to that).
inline namespace module_side {
extern const char& kTorchFramework;
}  // namespace module_side
#else
extern const char kTorchFramework;
#endif
extern const HandleOps kTorchHandleOps;
extern const HandleOps kTorchBorrowedHandleOps;
extern const HandleOps kTorchOpaqueHandleOps;

inline bool is_torch_handle(const SourceHandle& h) noexcept {
  return h.ops() != nullptr && h.ops()->framework == &kTorchFramework;
}

// Off: ignore handles and rebuild every at::Tensor with from_blob (to test
// and benchmark that path in the same process).
#ifdef INFINI_OPS_LIBRARY_LINK
inline namespace module_side {
extern std::atomic<bool>& g_handle_reuse;
}  // namespace module_side
#else
extern std::atomic<bool> g_handle_reuse;
#endif

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

c10::ScalarType to_aten(DataType dtype);
c10::Device to_aten(Device device);

// A framework mode or transform is active (a TorchDispatchMode, a functorch
// layer, functionalization: dispatch keys included in thread-local state
// beyond the defaults): calls must reach the dispatcher with the original
// tensors.
bool framework_mode_active() noexcept;

// The TensorImpl to reuse, or null for the from_blob path. An opaque handle
// is always reused (its tensor has no memory to rebuild a tensor from), and
// so is every handle while a framework mode is active (the mode must see the
// tensors the caller passed), and a wrapped number (the 0-dim tensor the
// binding made of a Python number given for a tensor, call.cpp): its mark,
// which makes type promotion rank it like a Python scalar, is not in its
// data, shape or strides, so a from_blob rebuild would compute in another
// dtype. None of these checks runs while handle reuse is on.
inline c10::TensorImpl* reusable_impl(const Tensor& t) noexcept {
  const SourceHandle& h = t.handle();
  if (is_torch_handle(h) &&
      (g_handle_reuse.load(std::memory_order_relaxed) || h.opaque() ||
       static_cast<c10::TensorImpl*>(h.get())->is_wrapped_number() ||
       framework_mode_active())) [[likely]] {
    return static_cast<c10::TensorImpl*>(h.get());
  }
  return nullptr;
}

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
// list elements always arrive with owning handles (see converters.cpp), so
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

at::Scalar to_aten(const Scalar& s);
inline std::optional<at::Scalar> to_aten(const std::optional<Scalar>& s) {
  if (!s) return std::nullopt;
  return to_aten(*s);
}

class AtenScalarList {
 public:
  c10::SmallVector<at::Scalar, 8> items;
  operator at::ArrayRef<at::Scalar>() const { return items; }
};
inline AtenScalarList to_aten(std::span<const Scalar> ss) {
  AtenScalarList list;
  for (const Scalar& s : ss) list.items.push_back(to_aten(s));
  return list;
}

inline int64_t to_aten(int64_t v) { return v; }
inline std::optional<int64_t> to_aten(std::optional<int64_t> v) { return v; }
inline double to_aten(double v) { return v; }
inline std::optional<double> to_aten(std::optional<double> v) { return v; }
inline bool to_aten(bool v) { return v; }
inline std::optional<bool> to_aten(std::optional<bool> v) { return v; }

inline at::IntArrayRef to_aten(std::span<const int64_t> v) {
  return at::IntArrayRef(v.data(), v.size());
}
inline at::OptionalIntArrayRef to_aten(
    std::optional<std::span<const int64_t>> v) {
  if (!v) return std::nullopt;
  return at::IntArrayRef(v->data(), v->size());
}
inline std::optional<at::ArrayRef<double>> to_aten(
    std::optional<std::span<const double>> v) {
  if (!v) return std::nullopt;
  return at::ArrayRef<double>(v->data(), v->size());
}

template <std::size_t N>
std::array<bool, N> to_aten(const std::array<bool, N>& v) {
  return v;
}

inline c10::string_view to_aten(std::string_view v) {
  return c10::string_view(v.data(), v.size());
}
inline std::optional<c10::string_view> to_aten(
    std::optional<std::string_view> v) {
  if (!v) return std::nullopt;
  return to_aten(*v);
}

inline std::optional<c10::ScalarType> to_aten(std::optional<DataType> dtype) {
  if (!dtype) return std::nullopt;
  return to_aten(*dtype);
}

// Before the ATen call. A from_blob tensor has a Storage of its own, so
// ATen's overlap checks, which compare storages, cannot see that an output
// shares memory with another argument, and the kernel would silently compute
// on aliased memory. Where any tensor takes that path, check byte ranges
// and raise what PyTorch raises for such a call (RuntimeError). An output
// that is exactly one of the inputs (in place: the same tensor, or for
// tensors made in C++ the same memory, dtype, shape and strides) stays
// allowed, and gets that input's at::Tensor (AtenTensor::share): ATen treats
// an output that is one of the inputs differently (TensorIterator then never
// resizes it), so two wrappers of one tensor would not behave as the
// caller's tensor does.
struct OverlapOutput {
  const Tensor& core;
  AtenTensor& aten;
};
struct OverlapInput {
  const Tensor* core;  // null: an absent optional
  const at::Tensor* aten;
  bool from_blob;
};
inline OverlapOutput output(const Tensor& t, AtenTensor& a) noexcept { return {t, a}; }
inline OverlapInput input(const Tensor& t, const AtenTensor& a) noexcept {
  return {&t, &a.get(), a.from_blob()};
}
inline OverlapInput input(const std::optional<Tensor>& t, const AtenOptionalTensor& a) noexcept {
  return t ? OverlapInput{&*t, &*a.get(), a.from_blob()} : OverlapInput{nullptr, nullptr, false};
}
// The wrappers call it only where some tensor took the from_blob path:
//   if (any_from_blob(a_out, a_self, ...)) [[unlikely]] check_overlap(...);
// so that the reuse path builds no argument lists.
template <class... A>
[[gnu::always_inline]] inline bool any_from_blob(const A&... a) noexcept {
  return (a.from_blob() || ...);
}
void check_overlap(const char* op, std::initializer_list<OverlapOutput> outs,
                   std::initializer_list<OverlapInput> ins);

// After the ATen call: an output that did not reuse its handle (from_blob
// path) cannot follow a resize or restride ATen made, so the caller's tensor
// would silently not hold the result. Raise instead (RuntimeError). ATen's
// "was resized" warning for that output is then false: the Python binding
// drops it when this error leaves the call.
class OutputNotResizable : public Error {
 public:
  using Error::Error;
};
[[noreturn]] void output_not_resizable(const Tensor& t, const at::Tensor& a,
                                       const char* op, const char* name);

void copy_back_moved_output(const Tensor& t, const at::Tensor& a);

// A tensor written through a stand-in at::Tensor (from_blob path) whose
// source has a handle: the source records as many writes as ATen made on
// the stand-in, so its version counter moves exactly as PyTorch's would.
void propagate_writes(const Tensor& t, const at::Tensor& a);

void check_rebuilt_output(const Tensor& t, const at::Tensor& a, const char* op,
                          const char* name);
inline void check_output(const Tensor& t, const at::Tensor& a, const char* op,
                         const char* name) {
  if (a.unsafeGetTensorImpl() == t.handle().get()) return;  // reused: ATen resized it
  check_rebuilt_output(t, a, op, name);
}

inline void check_output(std::span<const Tensor> ts, const AtenTensorList& as,
                         const char* op, const char* name) {
  for (std::size_t k = 0; k < ts.size(); ++k) check_output(ts[k], as.items[k], op, name);
}

// Inputs the schema marks as written (`Tensor(a!)`, not out=): on the
// from_blob path their writes are propagated like an output's.
inline void check_mutated(const Tensor& t, const at::Tensor& a) {
  if (a.unsafeGetTensorImpl() != t.handle().get() && t.has_handle()) propagate_writes(t, a);
}
inline void check_mutated(const std::optional<Tensor>& t, const AtenOptionalTensor& a) {
  if (t) check_mutated(*t, *a.get());
}
inline void check_mutated(std::span<const Tensor> ts, const AtenTensorList& as) {
  for (std::size_t k = 0; k < ts.size(); ++k) check_mutated(ts[k], as.items[k]);
}

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

// The same on the lane, whose tensors lane_tensors (converters.h) found
// plain dense CPU tensors that do not require grad: only the call's context
// is left to check.
[[gnu::always_inline]] inline bool direct_lane() {
  return g_direct_mode.load(std::memory_order_relaxed) && direct_cpu_context();
}

// What ADInplaceOrView does for each written tensor of a call through the
// dispatcher.
inline void bump_version(const at::Tensor& t) { t.unsafeGetTensorImpl()->bump_version(); }
inline void bump_version(const AtenOptionalTensor& t) {
  if (t.get()) bump_version(*t.get());
}

// --- Calls without out= (lane.h: Results) -------------------------------------

// Outputs a fallback made (ATen's functional overload) handed to the binding.
inline void give(Results& r, at::Tensor&& t) {
  if (r.count == Results::kMax) throw Error("more outputs than Results holds");
  r.impls[r.count++] = t.unsafeReleaseTensorImpl();
}
template <class... T>
void give(Results& r, std::tuple<T...>&& ts) {
  std::apply([&](auto&... t) { (give(r, std::move(t)), ...); }, ts);
}

// Stand-ins on the meta device of a call's arguments: the same sizes,
// strides and dtype, no data (a wrapped number is kept as it is). Running the op on them gives its outputs' geometry, as torch's
// own call would allocate them.
at::Tensor to_meta(const at::Tensor& t);
inline at::Tensor to_meta(const AtenTensor& t) { return to_meta(t.get()); }
inline std::optional<at::Tensor> to_meta(const AtenOptionalTensor& t) {
  if (!t.get()) return std::nullopt;
  return to_meta(*t.get());
}
class MetaList {
 public:
  c10::SmallVector<at::Tensor, kLaneListItems> items;
  operator at::TensorList() const { return items; }
  operator at::ITensorListRef() const { return at::TensorList(items); }
};
inline MetaList to_meta(const AtenBorrowedList& list) {
  MetaList result;
  for (const at::Tensor& t : list.items) result.items.push_back(to_meta(t));
  return result;
}

// The device a call's outputs go to: the first tensor's off the CPU (a CPU
// 0-dim tensor may join tensors of another device, meta ones included),
// else the CPU.
inline void first_device(c10::Device& d, const at::Tensor& t) {
  if (d.is_cpu() && t.defined() && !t.is_cpu()) d = t.device();
}
inline void first_device(c10::Device& d, const AtenTensor& t) { first_device(d, t.get()); }
inline void first_device(c10::Device& d, const AtenOptionalTensor& t) {
  if (t.get()) first_device(d, *t.get());
}
inline void first_device(c10::Device& d, const AtenBorrowedList& list) {
  for (const at::Tensor& t : list.items) first_device(d, t);
}
template <class... T>
c10::Device output_device(const T&... tensors) {
  c10::Device d(c10::DeviceType::CPU);
  (first_device(d, tensors), ...);
  return d;
}

// Whether a call without out= may allocate its outputs with a meta run and
// go the out= way (where a native kernel may take it): no mode or profiler
// to see the meta run, and no tensor autograd must follow (the functional
// overload records the graph that torch's own call records).
inline bool meta_plain(const at::Tensor& t) {
  return !t.defined() || (!t.requires_grad() && !t._fw_grad(/*level=*/0).defined());
}
inline bool meta_plain(const AtenTensor& t) { return meta_plain(t.get()); }
inline bool meta_plain(const AtenOptionalTensor& t) { return !t.get() || meta_plain(*t.get()); }
inline bool meta_plain(const AtenBorrowedList& list) {
  for (const at::Tensor& t : list.items) {
    if (!meta_plain(t)) return false;
  }
  return true;
}
template <class... T>
bool meta_allowed(const T&... tensors) {
  return (meta_plain(tensors) && ...) && direct_cpu_context();
}

// Whether a composite's outputs allocated for a call without out= are shaped
// by its body run on meta tensors: where the call must reach the native
// kernel (implementation='native'), or the outputs go the from_blob path,
// which cannot grow them.
inline bool shape_composite_outputs(bool native) noexcept {
  return native || !g_handle_reuse.load(std::memory_order_relaxed);
}
// An empty meta tensor of t's dtype: a composite's output for its meta run.
at::Tensor empty_meta_like(const AtenTensor& t);

// Empty outputs on `device` with the geometry of meta ones.
void give_like(Results& r, const at::Tensor& meta, c10::Device device);
template <class... T>
void give_like(Results& r, const std::tuple<T...>& metas, c10::Device device) {
  std::apply([&](const auto&... t) { (give_like(r, t, device), ...); }, metas);
}
// An empty output of t's shape, dtype and device (a composite's 'like').
void give_like(Results& r, const AtenTensor& t);
// An empty (0-element) output of t's dtype and device, which the fallback
// resizes: a composite's output that no 'like' shapes.
void give_empty_like(Results& r, const at::Tensor& t);

// ATen -> core, for the bridge's own use when a Python tensor arrives.
DataType from_aten(c10::ScalarType type);  // TypeError when unsupported
Device from_aten(c10::Device device);      // Error (RuntimeError) when unsupported
// Wraps t: metadata copied, handle attached. Owning: t's TensorImpl gains a
// reference. Borrowed: none; only for a tensor its caller keeps alive for as
// long as the returned Tensor (a copy of which owns).
Tensor from_aten(const at::Tensor& t);
Tensor from_aten_borrowed(const at::Tensor& t);
// Opaque: only the handle (owning), no data pointer; shape and strides when
// they are concrete; for tensors that must reach ATen through the dispatcher
// untouched (see kTorchOpaqueHandleOps). Never reads the data pointer.
Tensor from_aten_opaque(const at::Tensor& t);

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_ATEN_CONVERT_H_
