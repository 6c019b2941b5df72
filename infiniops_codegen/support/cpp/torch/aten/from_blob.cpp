// The from_blob path and the per-thread wrapper pool (from_blob.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/from_blob.h"

#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/PyObjectSlot.h>
#include <c10/util/intrusive_ptr.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "torch/aten/dtype_device.h"

namespace infini::ops::torch_bridge {

std::atomic<bool> g_wrapper_pool{true};

// An at::Tensor's sizes and strides are t's.
bool same_sizes_and_strides(const c10::TensorImpl* impl, const Tensor& t) noexcept {
  const auto sizes = impl->sizes();
  const auto strides = impl->strides();
  const std::size_t n = t.shape().size();
  if (sizes.size() != n) return false;
  const int64_t* shape = t.shape().data();
  const int64_t* steps = t.strides().data();
  for (std::size_t d = 0; d < n; ++d) {
    if (sizes[d] != shape[d] || strides[d] != steps[d]) return false;
  }
  return true;
}

namespace {

// The bytes t's elements span (the storage size from_blob gives it):
// computeStorageNbytes without its overflow checks, which the core Tensor's
// own (non-negative sizes of memory the caller holds) make moot.
std::size_t span_bytes(const Tensor& t) noexcept {
  int64_t last = 0;
  for (std::size_t d = 0; d < t.shape().size(); ++d) {
    if (t.shape()[d] == 0) return 0;
    last += (t.shape()[d] - 1) * t.strides()[d];
  }
  return static_cast<std::size_t>(last + 1) * t.element_size();
}

at::Tensor make_wrapper(const Tensor& t, c10::ScalarType dtype, c10::Device device) {
  const at::IntArrayRef sizes(t.shape().data(), t.shape().size());
  const at::IntArrayRef strides(t.strides().data(), t.strides().size());
  // A non-owning view of the caller's memory, but resizable through the
  // device allocator: some out= kernels (mse_loss with a reduction) resize
  // their output on the way, and a fixed storage would make them fail.
  // check_output copies a result that moved back into the caller's memory.
  c10::Storage storage(c10::Storage::use_byte_size_t(), span_bytes(t),
                       c10::DataPtr(t.data(), device), c10::GetAllocator(device.type()),
                       /*resizable=*/true);
  // Never an inference tensor: made in InferenceMode it would have no
  // version counter and refuse writes outside it, so the pool could not
  // serve it there. A normal tensor written in InferenceMode is what
  // PyTorch's own out= call does to a normal output.
  std::optional<c10::InferenceMode> normal;
  if (c10::InferenceMode::is_enabled()) [[unlikely]] normal.emplace(false);
  auto tensor = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage),
      c10::DispatchKeySet(c10::computeDispatchKey(dtype, c10::kStrided, device)),
      caffe2::TypeMeta::fromScalarType(dtype));
  tensor.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  return tensor;
}

// --- The wrapper pool ------------------------------------------------------------
// Per thread: a few wrappers, each with the pool's only reference, keyed by
// what re-binding does not change (dtype and device: the dispatch keys a
// TensorImpl is made with). Wrappers are never inference tensors (make_wrapper),
// so one serves calls in and out of InferenceMode alike.

constexpr int kPoolWrappers = 32;  // per thread; more in one call are made fresh

struct WrapperPool {
  struct Entry {
    uint32_t key;
    c10::TensorImpl* impl;  // holds one reference
  };
  Entry entries[kPoolWrappers];
  int size = 0;
  WrapperPoolStats stats;

  void clear() noexcept {
    while (size > 0) c10::raw::intrusive_ptr::decref(entries[--size].impl);
    stats = {};
  }
  ~WrapperPool() { clear(); }
};

// The calling thread's pool, reached through one pointer in the static TLS
// block (initial-exec: no __tls_get_addr call on each access, which cost as
// much as the rest of a re-bind). Made on the thread's first from_blob call
// (one allocation per thread) and owned by a thread_local PoolOwner, whose
// destructor releases the wrappers at thread exit and leaves kExited: from
// then on the thread gets fresh wrappers only.
[[gnu::tls_model("initial-exec")]] thread_local WrapperPool* t_pool = nullptr;
WrapperPool* const kExited = reinterpret_cast<WrapperPool*>(alignof(WrapperPool));

struct PoolOwner {
  std::unique_ptr<WrapperPool> pool = std::make_unique<WrapperPool>();
  ~PoolOwner() { t_pool = kExited; }
};

[[gnu::noinline]] WrapperPool* first_pool() noexcept {
  try {
    thread_local PoolOwner owner;
    return t_pool = owner.pool.get();
  } catch (...) {  // out of memory: fresh wrappers
    return nullptr;
  }
}

// The pool, or null once the thread is exiting.
inline WrapperPool* this_thread_pool() noexcept {
  WrapperPool* pool = t_pool;
  if (pool == nullptr) [[unlikely]] return first_pool();
  return pool == kExited ? nullptr : pool;
}

// Nobody but the caller (one reference) holds the wrapper or its storage,
// and it is still the plain dense tensor make_wrapper made (no conj or neg
// bit, no Python dispatch, no autograd state, no Python object: it never met
// a TorchDispatchMode or a Python kernel): re-binding it then changes
// nothing anyone else can see.
bool rebindable(const at::Tensor& wrapper) noexcept {
  constexpr c10::DispatchKeySet kChanged(
      {c10::DispatchKey::Conjugate, c10::DispatchKey::Negative, c10::DispatchKey::Python,
       c10::DispatchKey::PythonTLSSnapshot});
  if (wrapper.use_count() != 1 || wrapper.weak_use_count() != 1) return false;
  const c10::TensorImpl* impl = wrapper.unsafeGetTensorImpl();
  if (!(impl->key_set() & kChanged).empty() || impl->autograd_meta() != nullptr ||
      impl->pyobj_slot()->load_pyobj() != nullptr || !impl->has_storage()) [[unlikely]] {
    return false;
  }
  // Nobody else holds its storage (a view ATen kept): counted without
  // touching the counts.
  const c10::Storage& storage = impl->unsafe_storage();
  if (storage.use_count() != 1 || !storage.resizable()) return false;
  auto counted = c10::intrusive_ptr<c10::StorageImpl>::reclaim(storage.unsafeGetStorageImpl());
  const bool alone = counted.weak_use_count() == 1;
  (void)counted.release();
  return alone;
}

// The wrapper has t's geometry and starts where its storage does.
bool same_geometry(const c10::TensorImpl* impl, const Tensor& t) noexcept {
  return impl->storage_offset() == 0 && same_sizes_and_strides(impl, t);
}

void rebind(c10::TensorImpl* impl, const Tensor& t) {
  c10::StorageImpl* storage = impl->unsafe_storage().unsafeGetStorageImpl();
  const at::DataPtr& current = storage->_mutable_data_ptr_no_checks();
  // The same memory and geometry as its last call (a caller's loop over the
  // same buffers): only the version is left to reset. A storage ATen
  // reallocated (a resize) has another pointer and an owning context.
  const bool same_memory = current.get() == t.data() && current.get_context() == nullptr;
  if (!same_memory || !same_geometry(impl, t)) {
    // Frees what ATen allocated if it resized this wrapper last time.
    // Same device: the pool's key.
    storage->set_data_ptr_noswap(c10::DataPtr(t.data(), impl->device()));
    storage->set_nbytes(span_bytes(t));
    impl->set_sizes_and_strides(at::IntArrayRef(t.shape().data(), t.shape().size()),
                                at::IntArrayRef(t.strides().data(), t.strides().size()),
                                /*storage_offset=*/0);
  }
  // Versions count this call's writes only (propagate_writes reads them).
  // (An atomic store: skipped for inputs, which nobody wrote.)
  const auto& version = impl->version_counter();
  if (version.enabled() && version.current_version() != 0) {
    const_cast<c10::VariableVersion&>(version).set_version(0);
  }
}

}  // namespace

int16_t index_of_data(const Tensor& t) noexcept {
  if (t.data() == nullptr) return -1;
  try {
    const c10::DeviceType type = to_aten(Device{t.device().type, -1}).type();
    return static_cast<int16_t>(at::globalContext().getDeviceFromPtr(t.data(), type).index());
  } catch (...) {
    return -1;  // no hooks that can tell: the caller's device stands
  }
}

namespace {

// The device of a wrapper over t's memory, as at::from_blob settles it: a
// device tensor is on the device its memory is on (the backend's
// getDeviceFromPtr), so index -1 ("the current device", as in PyTorch)
// becomes that device, and another index given is PyTorch's error. The CPU,
// and memory no hook can place, keep the device given.
c10::Device placed(const Tensor& t) {
  const c10::Device given = to_aten(t.device());
  if (given.is_cpu()) [[likely]] return given;
  const int16_t actual = index_of_data(t);
  if (actual < 0) {
    if (given.has_index()) return given;
    const auto* guard = c10::impl::getDeviceGuardImpl(given.type());
    return guard->getDevice();  // no memory (no element): the current device
  }
  if (given.has_index() && given.index() != actual) {
    throw Error("Specified device " + given.str() + " does not match device of data " +
                c10::Device(given.type(), static_cast<c10::DeviceIndex>(actual)).str());
  }
  return c10::Device(given.type(), static_cast<c10::DeviceIndex>(actual));
}

}  // namespace

at::Tensor from_blob(const Tensor& t) {
  return make_wrapper(t, to_aten(t.dtype()), placed(t));
}

at::Tensor pooled_from_blob(const Tensor& t) {
  // A device tensor's index is checked against its memory's on every call,
  // as at::from_blob does (a re-bound wrapper would otherwise keep a wrong one).
  if (t.device().type != DeviceType::kCpu) [[unlikely]] (void)placed(t);
  WrapperPool* pool = this_thread_pool();
  if (pool != nullptr && g_wrapper_pool.load(std::memory_order_relaxed)) [[likely]] {
    const uint32_t key = wrapper_key(t);
    for (int k = pool->size; k-- > 0;) {
      if (pool->entries[k].key == key) {
        c10::TensorImpl* impl = pool->entries[k].impl;
        pool->entries[k] = pool->entries[--pool->size];
        rebind(impl, t);
        ++pool->stats.rebound;
        // The pool's reference passes to the caller's at::Tensor.
        return at::Tensor(
            c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim(impl));
      }
    }
  }
  if (pool != nullptr) ++pool->stats.fresh;
  return make_wrapper(t, to_aten(t.dtype()), placed(t));
}

void give_back(at::Tensor&& wrapper, uint32_t key) noexcept {
  WrapperPool* pool = this_thread_pool();
  if (pool == nullptr) return;  // the wrapper's own destructor releases it
  if (!wrapper.defined() || !g_wrapper_pool.load(std::memory_order_relaxed) ||
      pool->size == kPoolWrappers || !rebindable(wrapper)) {
    ++pool->stats.dropped;
    return;
  }
  pool->entries[pool->size++] = WrapperPool::Entry{key, wrapper.unsafeReleaseTensorImpl()};
  ++pool->stats.kept;
}

WrapperPoolStats wrapper_pool_stats() noexcept {
  WrapperPool* pool = this_thread_pool();
  if (pool == nullptr) return {};
  WrapperPoolStats stats = pool->stats;
  stats.pooled = pool->size;
  return stats;
}

void clear_wrapper_pool() noexcept {
  if (WrapperPool* pool = this_thread_pool()) pool->clear();
}

}  // namespace infini::ops::torch_bridge
