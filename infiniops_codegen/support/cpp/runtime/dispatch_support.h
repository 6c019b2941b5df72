#pragma once
// Helpers for the generated dispatch (generated/ops.cpp): whether a native
// kernel applies, and the errors for a forced implementation that does not.

#include <initializer_list>
#include <optional>
#include <span>
#include <string>

#include "core/core.h"
#include "core/observe.h"

namespace infini::ops {

namespace torch_fallback {

// Whether a native kernel may run now: no framework mode or transform is
// active (torch: a TorchDispatchMode, FakeTensorMode, a functorch layer),
// which must see the call through the framework instead. Defined by the
// torch bridge.
bool native_context() noexcept;

// Records a native kernel's call (or a composite's whole call) for the
// framework's profiler under the name the framework's own op would have
// ("aten::add"), when a profiler or other observer listens; one check
// otherwise. Defined by the torch bridge.
class ProfileScope {
 public:
  explicit ProfileScope(const char* name);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  void* record_ = nullptr;
};

}  // namespace torch_fallback

// A native kernel's dtypes, each with the most elements for which it is the
// default (-1: any size): past that, PyTorch's vectorised kernels are faster.
// implementation="native" ignores the limit.
struct NativeDtype {
  DataType dtype;
  int64_t up_to;
};

inline bool native_applies(Implementation impl, const Tensor& key,
                           std::initializer_list<NativeDtype> dtypes) {
  for (const NativeDtype& d : dtypes) {
    if (d.dtype == key.dtype()) {
      return d.up_to < 0 || impl == Implementation::kNative || key.numel() <= d.up_to;
    }
  }
  return false;
}

// The device of an op whose tensors come only in lists (the first one's;
// the CPU for an empty list).
inline Device list_device(std::span<const Tensor> tensors) {
  return tensors.empty() ? Device{} : tensors.front().device();
}

// The implementation choices as the caller spells them: C++ callers see
// the enumerators, Python callers the keyword's values (ImplementationError).
struct ImplementationSpelling {
  const char* native;
  const char* instead;
};
inline constexpr ImplementationSpelling kCppSpelling{
    "Implementation::kNative", "use Implementation::kTorch or Implementation::kDefault"};
inline constexpr ImplementationSpelling kPythonSpelling{"implementation='native'",
                                                        "use 'torch' or 'default'"};

[[noreturn]] inline void no_native_kernel(const char* op) {
  auto text = [op](const ImplementationSpelling& s) {
    return std::string(op) + "(): " + s.native +
           " was requested, but this op has no native kernel; " + s.instead;
  };
  throw ImplementationError(text(kCppSpelling), text(kPythonSpelling));
}

// implementation='native' in a call without out= whose outputs cannot be
// allocated ahead of it (the op's meta function cannot run on these
// arguments), so no native kernel can take it.
[[noreturn]] inline void native_needs_out(const char* op) {
  throw NotImplementedError(std::string(op) +
                            "(): implementation='native' was requested without out=, but "
                            "this call's outputs cannot be allocated ahead of it for a "
                            "native kernel to fill; pass out=, or use 'torch' or 'default'");
}

// Whether the library may run its own kernels on these arguments: no tensor
// with an opaque handle (core/handle.h), whose memory only its framework
// may touch.
inline bool addressable(const Tensor& t) noexcept { return t.addressable(); }
inline bool addressable(const std::optional<Tensor>& t) noexcept {
  return !t || t->addressable();
}
inline bool addressable(std::span<const Tensor> ts) noexcept {
  for (const Tensor& t : ts) {
    if (!t.addressable()) return false;
  }
  return true;
}
inline bool addressable(std::span<const std::optional<Tensor>> ts) noexcept {
  for (const auto& t : ts) {
    if (!addressable(t)) return false;
  }
  return true;
}
template <class... T>
bool all_addressable(const T&... tensors) noexcept {
  return (addressable(tensors) && ...);
}

// After a native kernel wrote its outputs (and any input it mutates): tell
// each tensor's framework (torch bumps the version counter, as its own out=
// call would).
inline void mark_written(const Tensor& t) { t.mark_written(); }
inline void mark_written(const std::optional<Tensor>& t) {
  if (t) t->mark_written();
}
inline void mark_written(std::span<const Tensor> ts) {
  for (const Tensor& t : ts) t.mark_written();
}

// One tensor argument, named, for error messages.
struct NamedTensor {
  const char* name;
  const Tensor* tensor;  // null: an absent optional
};
inline const Tensor* tensor_ptr(const Tensor& t) noexcept { return &t; }
inline const Tensor* tensor_ptr(const std::optional<Tensor>& t) noexcept {
  return t ? &*t : nullptr;
}

inline std::string describe(const Tensor& t) {
  auto dims = [](const Dims& d) {
    std::string text = "[";
    for (std::size_t k = 0; k < d.size(); ++k) {
      text += (k ? ", " : "") + std::to_string(d[k]);
    }
    return text + "]";
  };
  if (!t.addressable()) {
    return std::string(to_string(t.dtype())) + " tensor without addressable memory";
  }
  return std::string(to_string(t.dtype())) + " " + dims(t.shape()) + " strides " +
         dims(t.strides()) + " on " + std::string(to_string(t.device().type));
}

// Why no native kernel took a call (for errors and the trace). declined:
// the reason of the kernel that was called and declined (its KernelResult);
// null when none was called: no kernel applies to the device or dtype, or a
// tensor is not addressable.
inline std::string native_why(std::initializer_list<NamedTensor> tensors, const char* declined,
                              bool sized = false) {
  if (!torch_fallback::native_context()) {
    return "a framework mode or transform is active (a TorchDispatchMode, "
           "FakeTensorMode, a functorch layer), which must see the call through "
           "PyTorch's dispatcher";
  }
  for (const NamedTensor& t : tensors) {
    if (t.tensor != nullptr && !t.tensor->addressable()) {
      return std::string("'") + t.name +
             "' is a tensor whose memory the library must not address (it requires "
             "grad or has a forward-AD tangent, is fake, meta, sparse or a functorch "
             "wrapper, has the conj/neg bit, or a framework mode is active), so only "
             "PyTorch's dispatcher can compute on it";
    }
  }
  if (declined != nullptr) return std::string("the native kernel declined this call: ") + declined;
  // sized: the default implementation, which leaves large tensors to ATen.
  return sized ? "no native kernel applies to this device, dtype and size"
               : "no native kernel applies to this device and dtype";
}

// The tensors of a call, for messages ("input: float32 [2, 3] ...").
inline std::string describe(std::initializer_list<NamedTensor> tensors) {
  std::string args;
  for (const NamedTensor& t : tensors) {
    if (t.tensor == nullptr) continue;
    args += (args.empty() ? "" : ", ") + std::string(t.name) + ": " + describe(*t.tensor);
  }
  return args;
}

// implementation="native" could not be honoured: say why. `kernels`: which
// platforms and dtypes have kernels, for the message.
[[noreturn]] inline void native_unsupported(const char* op,
                                            std::initializer_list<NamedTensor> tensors,
                                            const char* kernels, const char* declined) {
  const std::string why = native_why(tensors, declined);
  const std::string args = describe(tensors);
  auto text = [&](const ImplementationSpelling& s) {
    return std::string(op) + "(): " + s.native + " was requested, but " + why + " (" +
           args + "; native kernels: " + kernels + "); " + s.instead;
  };
  throw ImplementationError(text(kCppSpelling), text(kPythonSpelling));
}

// A native kernel returned success while some thread had a dropped decline
// (core/decline.h): if it is this thread's, the kernel declined through a
// helper, dropped that result and reported success, so what is in `out` is
// not the answer and the call raises instead of returning it.
[[gnu::cold, gnu::noinline]] inline void check_dropped_decline(const char* op,
                                                                const char* platform) {
  const char* reason = native::take_dropped_decline();
  if (reason == nullptr) return;  // another thread's
  throw Error(std::string(op) + "(): the native " + platform + " kernel (native::" + platform +
              "::" + op + ") reported success after one of its helpers declined the call (\"" +
              reason +
              "\") and the kernel dropped that result, so the output was not computed. "
              "In the kernel, return the helper's result (`return binary_loop<T>(...);`) or "
              "test it (`if (auto r = elementwise_ok(...); !r) return r;`)");
}

// A call about to fall back, while something observes (core/observe.h):
// notes what runs it and why no native kernel did, and raises where
// require_native asks for the native kernel. kernels: the op's native
// kernels ("cpu: float32, ..."), null when it has none.
[[gnu::cold, gnu::noinline]] inline void observe_fallback(const char* op, Implementation impl, bool composite,
                             const char* kernels, const char* declined,
                             std::initializer_list<NamedTensor> tensors) {
  observe::Call* c = observe::current();
  std::string why;
  if (impl != Implementation::kTorch) {
    why = kernels != nullptr ? native_why(tensors, declined, impl == Implementation::kDefault)
                             : "the op has no native kernel";
  }
  if (c != nullptr) {
    c->ran = composite ? observe::Ran::kComposite : observe::Ran::kTorch;
    if (kernels != nullptr) c->declined = why;
  }
  if (impl == Implementation::kDefault && observe::strict(op)) {
    std::string text = std::string(op) +
                       "(): require_native: the call would fall back to PyTorch, because " +
                       why;
    if (kernels != nullptr) {
      text += " (" + describe(tensors) + "; native kernels: " + kernels +
              "; by default a native kernel takes sizes up to its limit, which "
              "implementation='native' lifts)";
    }
    throw ImplementationError(text, text);
  }
}

}  // namespace infini::ops
