#pragma once
// A non-owning reference to a callable `void()`: the generated dispatch hands
// "run this op" to the stream support without a std::function allocation.

#include <memory>
#include <type_traits>

namespace infini::ops {

class FunctionRef {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef>)
  FunctionRef(F&& f) noexcept  // NOLINT: implicit, like std::function_ref
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object) { (*static_cast<std::remove_reference_t<F>*>(object))(); }) {}

  void operator()() const { call_(object_); }

 private:
  void* object_;
  void (*call_)(void*);
};

}  // namespace infini::ops
