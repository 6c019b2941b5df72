// The torch side of the sim backend: the PrivateUse1 allocator, device
// guard, hooks, generator, the kernels a boxed fallback cannot provide
// (factories, views, copies, resize) and the CPU fallback for every other op.
#include "infini_sim/torch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <array>
#include <mutex>

namespace infini_sim {

namespace {

constexpr auto kSim = c10::DeviceType::PrivateUse1;

// The current stream of each device, per thread (as CUDA's); 0 is the
// default stream.
thread_local std::array<c10::StreamId, kDeviceCount> t_current_stream{};

c10::DeviceIndex resolve(c10::DeviceIndex index) {
  if (index < 0) {
    return static_cast<c10::DeviceIndex>(current_device());
  }
  TORCH_CHECK(index < kDeviceCount, "invalid sim device index ", index,
              " (there are ", kDeviceCount, " sim devices)");
  return index;
}

c10::Stream make_stream(c10::DeviceIndex index, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kSim, index), id);
}

simStream_t handle_of(const c10::Stream& s) {
  return s.id() == 0 ? default_stream(s.device_index())
                     : reinterpret_cast<simStream_t>(s.id());
}

c10::StreamId id_of(simStream_t stream) {
  return stream_id(stream) == 0 ? 0 : reinterpret_cast<c10::StreamId>(stream);
}

// The current stream of a device (-1: the current device).
simStream_t current_handle(c10::DeviceIndex index) {
  index = resolve(index);
  return handle_of(make_stream(index, t_current_stream[index]));
}

// ---- allocator ----

void free_block(void* ptr) { device_free(ptr); }

struct SimAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    const int device = current_device();
    void* p = device_malloc(device, n);
    return {p, p, &free_block,
            c10::Device(kSim, static_cast<c10::DeviceIndex>(device))};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_block; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    auto stream = current_handle(resolve(-1));
    memcpy_device_to_device(dest, src, count, stream);
    stream_synchronize(stream);
  }
};

SimAllocator g_allocator;

// ---- device guard ----

struct SimGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kSim; }
  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kSim, "expected a sim device, got ", d);
    const int old = exchange_device(d.index());
    return c10::Device(kSim, static_cast<c10::DeviceIndex>(old));
  }
  c10::Device getDevice() const override {
    return c10::Device(kSim, static_cast<c10::DeviceIndex>(current_device()));
  }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kSim, "expected a sim device, got ", d);
    set_device(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_device(d.index());
    } catch (...) {
    }
  }
  c10::Stream getStream(c10::Device d) const override {
    const auto index = resolve(d.index());
    return make_stream(index, t_current_stream[index]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return make_stream(resolve(d.index()), 0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d,
                                      bool /*high_priority*/) const override {
    const auto index = resolve(d.index());
    return make_stream(index, id_of(pool_stream(index)));
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    const auto index = resolve(d.index());
    return make_stream(index, id_of(create_stream(index)));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    const auto index = resolve(s.device_index());
    const auto old = make_stream(index, t_current_stream[index]);
    t_current_stream[index] = s.id();
    return old;
  }
  // No `override`: keeps building against releases whose interface lacks it.
  void* getStreamNativeHandle(const c10::Stream s) const {
    return handle_of(s);
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return kDeviceCount;
  }
  void record(void** event, const c10::Stream& stream,
              const c10::DeviceIndex device_index,
              const c10::EventFlag /*flag*/) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "event device index ", device_index,
                " does not match the recording stream's device ",
                stream.device_index());
    if (!*event) {
      *event = event_create();
    }
    event_record(static_cast<simEvent_t>(*event), handle_of(stream));
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event) {
      stream_wait_event(handle_of(stream), static_cast<simEvent_t>(event));
    }
  }
  bool queryEvent(void* event) const override {
    return !event || event_query(static_cast<simEvent_t>(event));
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event) {
      event_destroy(static_cast<simEvent_t>(event));
    }
  }
  void synchronizeEvent(void* event) const override {
    if (event) {
      event_synchronize(static_cast<simEvent_t>(event));
    }
  }
  double elapsedTime(void* start, void* end,
                     const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end,
                "both events must be recorded before calculating elapsed time");
    return event_elapsed_ms(static_cast<simEvent_t>(start),
                            static_cast<simEvent_t>(end));
  }
  bool queryStream(const c10::Stream& s) const override {
    return stream_query(handle_of(s));
  }
  void synchronizeStream(const c10::Stream& s) const override {
    stream_synchronize(handle_of(s));
  }
  void synchronizeDevice(const c10::DeviceIndex index) const override {
    device_synchronize(resolve(index));
  }
  // Nothing to do: device_free already defers until the kernels that touch a
  // block finish, whichever stream they ran on.
  void recordDataPtrOnStream(const c10::DataPtr&,
                             const c10::Stream&) const override {}
};

// ---- generator: CPU semantics, one default per device ----

struct SimGeneratorImpl final : at::CPUGeneratorImpl {
  explicit SimGeneratorImpl(c10::DeviceIndex index) {
    device_ = c10::Device(kSim, index);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }
};

const at::Generator& default_generator(c10::DeviceIndex index) {
  static std::array<at::Generator, kDeviceCount>* gens = [] {
    auto* g = new std::array<at::Generator, kDeviceCount>;
    for (int i = 0; i < kDeviceCount; ++i) {
      (*g)[i] = at::make_generator<SimGeneratorImpl>(
          static_cast<c10::DeviceIndex>(i));
      (*g)[i].set_current_seed(c10::default_rng_seed_val);
    }
    return g;
  }();
  return (*gens)[resolve(index)];
}

// ---- storage resize (the CPU one would memcpy device memory on the host) ----

void resize_storage_bytes(const c10::Storage& storage, size_t nbytes) {
  TORCH_CHECK(storage.resizable(),
              "Trying to resize storage that is not resizable");
  c10::Allocator* allocator = storage.allocator();
  TORCH_CHECK(allocator, "sim storage without an allocator");
  const c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = allocator->allocate(nbytes);
  const size_t keep = std::min(nbytes, storage.nbytes());
  if (keep > 0 && storage.data() != nullptr) {
    // Ordered on the current stream; the old block outlives the copy
    // (device_free waits for the kernels that touch it).
    memcpy_device_to_device(fresh.get(), storage.data(), keep,
                            current_handle(storage.device().index()));
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(nbytes);
}

void resize_impl(c10::TensorImpl* self, at::IntArrayRef size,
                 at::OptionalIntArrayRef stride) {
  at::native::resize_impl_cpu_(self, size, stride, /*resize_storage=*/false);
  if (self->numel() == 0) {
    return;
  }
  const auto itemsize = self->dtype().itemsize();
  const auto offset = self->storage_offset();
  const size_t needed =
      stride ? at::detail::computeStorageNbytes(size, *stride, itemsize, offset)
             : at::detail::computeStorageNbytesContiguous(size, itemsize, offset);
  const c10::Storage& storage = self->unsafe_storage();
  if (needed > storage.nbytes()) {
    resize_storage_bytes(storage, needed);
  }
}

// ---- hooks ----

struct SimHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override { return kDeviceCount; }
  void setCurrentDevice(c10::DeviceIndex d) const override { set_device(d); }
  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(current_device());
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    return static_cast<c10::DeviceIndex>(exchange_device(d));
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    return exchangeDevice(d);
  }
  const at::Generator& getDefaultGenerator(
      c10::DeviceIndex index) const override {
    return default_generator(index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return at::make_generator<SimGeneratorImpl>(resolve(index));
  }
  at::Device getDeviceFromPtr(void* data) const override {
    const int device = device_of(data);
    TORCH_CHECK(device >= 0, "pointer ", data, " is not sim device memory");
    return at::Device(kSim, static_cast<c10::DeviceIndex>(device));
  }
  bool isPinnedPtr(const void*) const override { return false; }
  at::Allocator* getPinnedMemoryAllocator() const override {
    TORCH_CHECK(false, "the sim backend has no pinned host memory");
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage,
                              size_t nbytes) const override {
    resize_storage_bytes(storage, nbytes);
  }
};

// ---- kernels ----

// The device a factory makes its tensor on, after what a sim tensor cannot be.
c10::Device factory_device(std::optional<c10::Device> device, std::optional<c10::Layout> layout,
                           std::optional<bool> pin_memory) {
  const auto d = c10::device_or_default(device);
  TORCH_CHECK(d.type() == kSim, "expected a sim device, got ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "the sim backend supports strided tensors only");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "only CPU memory can be pinned");
  return d;
}

at::Tensor empty_memory_format(c10::IntArrayRef size,
                               std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<c10::MemoryFormat> memory_format) {
  const auto d = factory_device(device, layout, pin_memory);
  const c10::DeviceGuard guard(d);
  return at::detail::empty_generic(
      size, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  const auto d = factory_device(device, layout, pin_memory);
  const c10::DeviceGuard guard(d);
  return at::detail::empty_strided_generic(
      size, stride, &g_allocator,
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size,
                      c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> offset;
  if (storage_offset) {
    offset = storage_offset->expect_int();
  }
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size),
                                           C10_AS_INTARRAYREF_SLOW(stride),
                                           offset);
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  resize_impl(impl, C10_AS_INTARRAYREF_SLOW(size), std::nullopt);
  if (memory_format) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve,
                "Unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage storage,
                               c10::SymInt storage_offset,
                               c10::SymIntArrayRef size,
                               c10::SymIntArrayRef stride) {
  const auto offset = storage_offset.expect_int();
  const auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  const auto strides = C10_AS_INTARRAYREF_SLOW(stride);
  at::native::checkSetStorage(self, storage, offset, sizes, strides);
  self.unsafeGetTensorImpl()->set_storage_offset(offset);
  at::OptionalIntArrayRef stride_opt;
  if (strides.data() != nullptr) {
    stride_opt = strides;
  }
  resize_impl(self.unsafeGetTensorImpl(), sizes, stride_opt);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source) {
  return at::native::set_(self, std::move(source));
}

at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, &g_allocator,
                       /*resizable=*/true);
  self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(storage));
  self.unsafeGetTensorImpl()->set_sizes_contiguous({0});
  return self;
}

// Elements from a tensor's first to its last addressed element.
int64_t span_elements(const at::Tensor& t) {
  int64_t extent = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    extent += (t.size(d) - 1) * t.stride(d);
  }
  return extent;
}

at::Tensor with_bits_of(at::Tensor view, const at::Tensor& like) {
  if (like.is_conj()) {
    view = view.conj();
  }
  if (like.is_neg()) {
    view = view._neg_view();
  }
  return view;
}

bool plain_copy(const at::Tensor& src, const at::Tensor& dst) {
  return src.dtype() == dst.dtype() && src.sizes() == dst.sizes() &&
         src.is_contiguous() && dst.is_contiguous() &&
         src.is_conj() == dst.is_conj() && src.is_neg() == dst.is_neg();
}

// A CPU tensor over a device tensor's memory; only for code that runs while
// the block is accessible (a kernel or a DeviceAccess scope).
at::Tensor host_view(const at::Tensor& t) {
  return with_bits_of(at::from_blob(t.data_ptr(), t.sizes(), t.strides(),
                                    t.options().device(at::kCPU)),
                      t);
}

void copy_host_to_device(const at::Tensor& src, const at::Tensor& dst) {
  const c10::DeviceGuard guard(dst.device());
  auto stream = current_handle(dst.device().index());
  if (plain_copy(src, dst)) {
    memcpy_host_to_device(dst.data_ptr(), src.data_ptr(), dst.nbytes(), stream);
    return;
  }
  const int64_t extent = span_elements(dst);
  const size_t bytes = extent * dst.element_size();
  auto staging = at::empty({extent}, dst.options().device(at::kCPU));
  if (!dst.is_non_overlapping_and_dense()) {
    // Gaps between dst's elements keep their device contents.
    const UncountedCopies internal;
    memcpy_device_to_host(staging.data_ptr(), dst.data_ptr(), bytes, stream);
  }
  with_bits_of(staging.as_strided(dst.sizes(), dst.strides(), 0), dst)
      .copy_(src);
  memcpy_host_to_device(dst.data_ptr(), staging.data_ptr(), bytes, stream);
}

void copy_device_to_host(const at::Tensor& src, const at::Tensor& dst) {
  const c10::DeviceGuard guard(src.device());
  auto stream = current_handle(src.device().index());
  if (plain_copy(src, dst)) {
    memcpy_device_to_host(dst.data_ptr(), src.data_ptr(), src.nbytes(), stream);
    return;
  }
  const int64_t extent = span_elements(src);
  auto staging = at::empty({extent}, src.options().device(at::kCPU));
  memcpy_device_to_host(staging.data_ptr(), src.data_ptr(),
                        extent * src.element_size(), stream);
  dst.copy_(with_bits_of(staging.as_strided(src.sizes(), src.strides(), 0), src));
}

void copy_device_to_device(const at::Tensor& src, const at::Tensor& dst) {
  const c10::DeviceGuard guard(dst.device());
  auto stream = current_handle(dst.device().index());
  if (src.device() != dst.device()) {
    // The copy waits for the source's producers on its own device.
    simEvent_t ready = event_create();
    event_record(ready, current_handle(src.device().index()));
    stream_wait_event(stream, ready);
    event_destroy(ready);
  }
  if (plain_copy(src, dst)) {
    memcpy_device_to_device(dst.data_ptr(), src.data_ptr(), dst.nbytes(),
                            stream);
    return;
  }
  // A strided, converting or conjugating copy runs here, on the calling
  // thread after the stream's work, as the fallback's ops do: whatever
  // copy_ refuses (overlap, a dtype it has no kernel for) is the caller's
  // error at once, never a sticky error of the stream.
  stream_synchronize(stream);
  const DeviceAccess access({dst.data_ptr(), src.data_ptr()});
  at::Tensor out = host_view(dst);
  out.copy_(host_view(src));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst,
                     bool /*non_blocking*/) {
  TORCH_CHECK(self.defined() && dst.defined(), "copy of an undefined tensor");
  if (dst.numel() == 0) {
    return dst;
  }
  const bool src_sim = self.device().type() == kSim;
  const bool dst_sim = dst.device().type() == kSim;
  if (src_sim && dst_sim) {
    copy_device_to_device(self, dst);
  } else if (dst_sim) {
    TORCH_CHECK(self.is_cpu(), "sim copies from ", self.device(),
                " are not supported");
    copy_host_to_device(self, dst);
  } else {
    TORCH_CHECK(dst.is_cpu(), "sim copies to ", dst.device(),
                " are not supported");
    copy_device_to_host(self, dst);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  const_cast<at::Tensor&>(dst).copy_(self);
  return dst;
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  const c10::DeviceGuard guard(self.device());
  auto host = at::empty({}, self.options().device(at::kCPU));
  memcpy_device_to_host(host.data_ptr(), self.data_ptr(), self.element_size(),
                        current_handle(self.device().index()));
  return with_bits_of(host, self).resolve_conj().resolve_neg().item();
}

// ---- the CPU fallback ----

std::string op_name(const c10::FunctionSchema& schema) {
  const auto& name = schema.operator_name();
  return name.overload_name.empty() ? name.name
                                    : name.name + "." + name.overload_name;
}

bool is_generator_type(const c10::TypePtr& type) {
  auto t = type;
  if (auto opt = t->cast<c10::OptionalType>()) {
    t = opt->getElementType();
  }
  return t->kind() == c10::TypeKind::GeneratorType;
}

// In the no-work mode: an op whose returns all alias (write) arguments
// returns those arguments untouched. False when any return is fresh.
bool push_aliased_arguments(const c10::FunctionSchema& schema,
                            torch::jit::Stack* stack) {
  const auto& args = schema.arguments();
  const auto& rets = schema.returns();
  if (rets.empty()) {
    return false;
  }
  c10::SmallVector<size_t, 4> sources;
  for (const auto& ret : rets) {
    const c10::AliasInfo* ai = ret.alias_info();
    if (!ai || !ai->isWrite()) {
      return false;
    }
    bool found = false;
    for (size_t j = 0; j < args.size() && !found; ++j) {
      const c10::AliasInfo* aj = args[j].alias_info();
      if (aj && *aj == *ai) {
        sources.push_back(j);
        found = true;
      }
    }
    if (!found) {
      return false;
    }
  }
  const size_t begin = stack->size() - args.size();
  c10::SmallVector<c10::IValue, 4> outs;
  for (size_t j : sources) {
    outs.push_back((*stack)[begin + j]);
  }
  torch::jit::drop(*stack, args.size());
  for (auto& v : outs) {
    stack->push_back(std::move(v));
  }
  return true;
}

[[noreturn]] void device_mismatch(const c10::Device& a, const c10::Device& b) {
  TORCH_CHECK(false,
              "Expected all tensors to be on the same device, but found at "
              "least two devices, ",
              a, " and ", b, "!");
}

void sim_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t begin = stack->size() - nargs;

  if (null_kernels() && push_aliased_arguments(schema, stack)) {
    return;
  }

  // The device the op runs for, and torch's check that tensors agree
  // (a CPU tensor is allowed only as a 0-dim scalar, as on CUDA).
  std::optional<c10::Device> sim_device, cpu_device;
  auto see = [&](const at::Tensor& t) {
    if (!t.defined()) {
      return;
    }
    const auto d = t.device();
    if (d.type() == kSim) {
      if (!sim_device) {
        sim_device = d;
      } else if (*sim_device != d) {
        device_mismatch(*sim_device, d);
      }
    } else if (t.dim() > 0 && !cpu_device) {
      cpu_device = d;
    }
  };
  for (size_t i = 0; i < nargs; ++i) {
    const auto& v = (*stack)[begin + i];
    if (v.isTensor()) {
      see(v.toTensor());
    } else if (v.isTensorList()) {
      for (const auto& t : v.toTensorVector()) {
        see(t);
      }
    }
  }
  if (sim_device && cpu_device) {
    device_mismatch(*sim_device, *cpu_device);
  }
  if (!sim_device) {
    for (size_t i = 0; i < nargs; ++i) {
      const auto& v = (*stack)[begin + i];
      if (v.isDevice() && v.toDevice().type() == kSim) {
        sim_device = c10::Device(kSim, resolve(v.toDevice().index()));
      }
    }
  }
  const c10::OptionalDeviceGuard guard(sim_device);
  count_fallback(op_name(schema));
  if (sim_device) {
    // Stream order: the CPU kernel reads what the current stream wrote.
    stream_synchronize(current_handle(sim_device->index()));
  }

  // A sim generator (or the device's default one for None) runs as a CPU
  // generator with its state, which is written back afterwards.
  struct Swap {
    at::Generator sim, cpu;
  };
  c10::SmallVector<Swap, 1> swaps;
  c10::SmallVector<std::unique_lock<std::mutex>, 1> locks;
  if (sim_device) {
    for (size_t i = 0; i < nargs; ++i) {
      if (!is_generator_type(schema.arguments()[i].type())) {
        continue;
      }
      auto& v = (*stack)[begin + i];
      at::Generator gen = v.isGenerator()
                              ? v.toGenerator()
                              : default_generator(sim_device->index());
      if (!gen.defined() || gen.device().type() != kSim) {
        continue;
      }
      locks.emplace_back(gen.mutex());
      at::Generator cpu = at::make_generator<at::CPUGeneratorImpl>();
      cpu.set_state(gen.get_state());
      v = c10::IValue(cpu);
      swaps.push_back({gen, cpu});
    }
  }

  {
    const UncountedCopies internal;
    at::native::cpu_fallback(op, stack, /*error_on_views=*/true);
    for (auto& s : swaps) {
      s.sim.set_state(s.cpu.get_state());
    }
    // cpu_fallback moves fresh outputs to the first tensor argument's
    // device, which is the CPU for a 0-dim CPU first argument.
    if (sim_device) {
      const auto& rets = schema.returns();
      const size_t rbegin = stack->size() - rets.size();
      for (size_t i = 0; i < rets.size(); ++i) {
        auto& v = (*stack)[rbegin + i];
        if (v.isTensor() && v.toTensor().defined() && v.toTensor().is_cpu()) {
          v = c10::IValue(v.toTensor().to(*sim_device));
        }
      }
    }
  }
}

// View ops whose only kernels are per backend (CPU, CUDA, ...; found with
// torchgen): their CPU kernels compute metadata and never read data, so the
// sim tensor itself goes to them and the result shares its storage.
void cpu_view(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

}  // namespace

// ---- torch.h ----

SimStream::SimStream(c10::Stream stream) : stream_(stream) {
  TORCH_CHECK(stream.device_type() == kSim,
              "SimStream wraps a sim stream, got one of ", stream.device());
}

simStream_t SimStream::stream() const { return handle_of(stream_); }

SimStream getStreamFromExternal(simStream_t stream, c10::DeviceIndex index) {
  TORCH_CHECK(stream, "getStreamFromExternal: null stream");
  const auto d = resolve(index);
  TORCH_CHECK(stream_device(stream) == d, "stream of sim device ",
              stream_device(stream), " given for sim device ", static_cast<int>(d));
  return SimStream(make_stream(d, id_of(stream)));
}

SimStream getCurrentSimStream(c10::DeviceIndex index) {
  const auto d = resolve(index);
  return SimStream(make_stream(d, t_current_stream[d]));
}

SimStream getDefaultSimStream(c10::DeviceIndex index) {
  return SimStream(make_stream(resolve(index), 0));
}

SimStream getStreamFromPool(bool /*high_priority*/, c10::DeviceIndex index) {
  const auto d = resolve(index);
  return SimStream(make_stream(d, id_of(pool_stream(d))));
}

void setCurrentSimStream(SimStream stream) {
  t_current_stream[resolve(stream.device_index())] = stream.unwrap().id();
}

SimStreamGuard::SimStreamGuard(SimStream stream)
    : original_device_(exchange_device(stream.device_index())),
      original_stream_(getCurrentSimStream(stream.device_index())) {
  setCurrentSimStream(stream);
}

SimStreamGuard::~SimStreamGuard() {
  setCurrentSimStream(SimStream(original_stream_));
  set_device(original_device_);
}

// ---- registrations ----

C10_REGISTER_GUARD_IMPL(PrivateUse1, SimGuardImpl);

namespace {

[[maybe_unused]] const bool g_registered = [] {
  c10::SetAllocator(kSim, &g_allocator);
  at::RegisterPrivateUse1HooksInterface(new SimHooks);
  return true;
}();

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage_offset));
  m.impl("set_.source_Storage", TORCH_FN(set_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  for (const char* name : {"unfold", "view_as_real", "view_as_complex"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&cpu_view>());
  }
}

// Copies honour the conjugate and negative bits themselves (with_bits_of);
// the generic conjugate fallback would materialize through clone -> copy_ ->
// _copy_from and recurse.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sim_fallback>());
}

}  // namespace infini_sim
