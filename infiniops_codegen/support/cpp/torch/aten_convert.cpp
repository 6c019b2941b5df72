// Core <-> ATen conversions that need more than the light headers.
#include "torch/aten_convert.h"
#include "torch/library_link.h"

#include "runtime/dispatch_support.h"
#include "torch_tables.h"

#include <ATen/Context.h>
#include <ATen/EmptyTensor.h>
#include <ATen/record_function.h>
#include <ATen/ops/copy.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/TensorOptions.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/PyObjectSlot.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace infini::ops::torch_bridge {

namespace {

void retain(void* impl) noexcept {
  c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(impl));
}

void release(void* impl) noexcept {
  c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(impl));
}

void keep(void*) noexcept {}  // a borrowed handle holds no reference

// What the dispatcher's ADInplaceOrView kernel does for each written tensor
// of an out= or in-place call. Raises, as PyTorch does, for an inference
// tensor outside inference mode; a no-op for one inside it.
void bump(void* impl, int64_t times) {
  for (int64_t k = 0; k < times; ++k) static_cast<c10::TensorImpl*>(impl)->bump_version();
}

}  // namespace

const char kTorchFramework = 0;
const HandleOps kTorchHandleOps{retain, release, nullptr, &kTorchFramework, false, bump};
const HandleOps kTorchBorrowedHandleOps{retain, keep, &kTorchHandleOps, &kTorchFramework,
                                        false, bump};
const HandleOps kTorchOpaqueHandleOps{retain, release, nullptr, &kTorchFramework, true, bump};
std::atomic<bool> g_handle_reuse{true};
std::atomic<bool> g_direct_mode{true};
std::atomic<bool> g_wrapper_pool{true};

bool framework_mode_active() noexcept {
  // BackendSelect and ADInplaceOrView are always included; a TorchDispatchMode
  // includes Python (FakeTensorMode and FunctionalTensorMode too), a vmap or
  // grad layer FuncTorchDynamicLayerFrontMode, and so on.
  const auto included = c10::impl::tls_local_dispatch_key_set().included_;
  return !(included - c10::default_included_set).empty();
}

bool direct_cpu_context() {
  // A framework mode needs the dispatcher; so does a RecordFunction observer
  // (torch.profiler): the dispatcher records the op, with the name, inputs
  // and sequence number torch's own call would have.
  return !framework_mode_active() &&
         !at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION).has_value();
}

// The dtype and device mappings are the generated tables
// (generated/torch_tables.h, from infiniops_codegen/data/dtypes.yaml and
// platforms.yaml); these functions only add the errors.

c10::ScalarType to_aten(DataType dtype) {
  return tables::scalar_type(dtype, [dtype]() -> c10::ScalarType {
    throw ValueError("unknown core dtype " + std::to_string(static_cast<int>(dtype)));
  });
}

DataType from_aten(c10::ScalarType type) {
  return tables::data_type(type, [type]() -> DataType {
    throw TypeError(std::string("dtype ") + c10::toString(type) +
                    " is not supported by the library");
  });
}

// Several platforms' torch ports reuse one PyTorch device type (iluvatar and
// metax run as CUDA; cambricon, moore and ascend as PrivateUse1): a c10
// device type's tensors belong to the first platform of the table the build
// has among those that use it, else to its upstream platform (a CPU-only
// build still runs CUDA tensors through the torch fallback); see
// tables::device_type.
Device from_aten(c10::Device device) {
  const auto index = static_cast<int16_t>(device.has_index() ? device.index() : -1);
  const auto type = tables::device_type(device.type(), [device]() -> DeviceType {
    // RuntimeError, as PyTorch raises for a tensor on an unexpected device.
    throw Error("device type " + c10::DeviceTypeName(device.type(), true) +
                " is not supported by the library");
  });
  return Device{type, index};
}

c10::Device to_aten(Device device) {
  const auto type = tables::c10_device_type(device.type, [device]() -> c10::DeviceType {
    throw TypeError("device " + std::string(to_string(device.type)) +
                    " has no PyTorch device in this build");
  });
  return c10::Device(type, static_cast<c10::DeviceIndex>(device.index));
}

at::Scalar to_aten(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::kBool: return at::Scalar(s.to_bool());
    case Scalar::Kind::kInt: return at::Scalar(s.to_int());
    case Scalar::Kind::kFloat: return at::Scalar(s.to_double());
    case Scalar::Kind::kComplex:
      return at::Scalar(c10::complex<double>(s.to_complex()));
  }
  throw ValueError("unknown scalar kind");
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

void AtenTensor::release() noexcept {
  give_back(std::move(tensor_), key_);
  tensor_.~Tensor();
}

void AtenOptionalTensor::release() noexcept {
  give_back(std::move(*tensor_), key_);
  tensor_.~optional();
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

void AtenTensor::share(const at::Tensor& same) noexcept {
  release();  // this one's own wrapper goes back to the pool
  new (&tensor_) at::Tensor(unowned(same.unsafeGetTensorImpl()));
  pooled_ = false;  // borrowed: nothing to release
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

namespace {

Tensor wrap(const at::Tensor& t, SourceHandle handle) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  const auto sizes = impl->sizes();
  const auto strides = impl->strides();
  return Tensor(t.data_ptr(), std::span<const int64_t>(sizes.data(), sizes.size()),
                std::span<const int64_t>(strides.data(), strides.size()),
                from_aten(t.scalar_type()), from_aten(t.device()), std::move(handle));
}

}  // namespace

Tensor from_aten(const at::Tensor& t) {
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  retain(impl);  // the handle owns this reference
  return wrap(t, SourceHandle::adopt(&kTorchHandleOps, impl));
}

Tensor from_aten_borrowed(const at::Tensor& t) {
  return wrap(t, SourceHandle::adopt(&kTorchBorrowedHandleOps, t.unsafeGetTensorImpl()));
}

Tensor from_aten_opaque(const at::Tensor& t) {
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  // Only the dispatcher computes on this tensor: the device is a hint for the
  // library's dispatch (a device the library has no platform for, such as
  // meta, counts as the CPU: no native kernel ever sees an opaque tensor).
  Device device{};
  try {
    device = from_aten(t.device());
  } catch (const Error&) {
  }
  Dims shape;
  Dims strides;
  if (!impl->has_symbolic_sizes_strides() && impl->layout() == c10::kStrided &&
      !impl->is_nested()) {
    const auto sizes = impl->sizes();
    const auto steps = impl->strides();
    shape = Dims(std::span<const int64_t>(sizes.data(), sizes.size()));
    strides = Dims(std::span<const int64_t>(steps.data(), steps.size()));
  }
  retain(impl);  // the handle owns this reference
  return Tensor(nullptr, std::move(shape), std::move(strides), from_aten(t.scalar_type()),
                device, SourceHandle::adopt(&kTorchOpaqueHandleOps, impl));
}

}  // namespace infini::ops::torch_bridge

namespace infini::ops::torch_fallback {

bool native_context() noexcept { return !torch_bridge::framework_mode_active(); }

ProfileScope::ProfileScope(const char* name) {
  auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION);
  if (callbacks.has_value()) [[unlikely]] {
    auto* record = new at::RecordFunction(std::move(*callbacks));
    record->before(std::string_view(name));
    record_ = record;
  }
}

ProfileScope::~ProfileScope() { delete static_cast<at::RecordFunction*>(record_); }

}  // namespace infini::ops::torch_fallback

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

namespace infini::ops::torch_bridge {

#ifdef INFINI_OPS_LIBRARY_LINK
#error "aten_convert.cpp is the library's: compile it without INFINI_OPS_LIBRARY_LINK"
#endif

namespace {
void clear_results(Results& r) { r.clear(); }
}  // namespace

// Constant-initialised: ready before any module's static initialisers run.
const LibraryLink kLibraryLink{
    sizeof(LibraryLink),
    &kTorchFramework,
    &g_handle_reuse,
    &g_direct_mode,
    &g_wrapper_pool,
    &framework_mode_active,
    static_cast<DataType (*)(c10::ScalarType)>(&from_aten),
    static_cast<Tensor (*)(const at::Tensor&)>(&from_aten),
    &from_aten_borrowed,
    &from_aten_opaque,
    &from_blob,
    &wrapper_pool_stats,
    &clear_wrapper_pool,
    &clear_results,
    &observe::kControl,
};

}  // namespace infini::ops::torch_bridge

namespace infini::ops::observe {
bool reuses_handle(const Tensor& t) noexcept {
  return torch_bridge::reusable_impl(t) != nullptr;
}
}  // namespace infini::ops::observe
