#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_DECLINE_H_
#define INFINI_OPS_CORE_DECLINE_H_

#include <atomic>
#include <concepts>

namespace infini::ops::native {

// A declined result that was destroyed unread on this thread (see
// KernelResult), or null. Set, the kernel being run declined through a
// helper and dropped that result: if it then claims to have computed `out`,
// the call raises instead of returning what is in `out`.
inline thread_local const char* t_dropped_decline = nullptr;
// How many threads have one set: the dispatch reads this after each native
// call (a plain load; a thread-local's address costs a call in a shared
// library) and looks at its thread's only when it is not zero, which no
// correct kernel makes it.
inline std::atomic<int> g_dropped_declines{0};

inline void record_dropped_decline(const char* reason) noexcept {
  if (t_dropped_decline == nullptr) g_dropped_declines.fetch_add(1, std::memory_order_relaxed);
  t_dropped_decline = reason;
}

// This thread's dropped decline, taken (null when it has none).
inline const char* take_dropped_decline() noexcept {
  const char* reason = t_dropped_decline;
  if (reason != nullptr) {
    t_dropped_decline = nullptr;
    g_dropped_declines.fetch_sub(1, std::memory_order_relaxed);
  }
  return reason;
}

// What a native kernel, and every helper of a kernel that can decline,
// returns: computed (true), or declined with the reason why (false). The
// reason travels with the result to the dispatch, which gives it in the
// error of implementation="native" and in the trace: nothing of one call is
// left for the next.
//
// A result must be used. Discarding one is a compile error (nodiscard, made
// an error by the CMake project's -Werror=unused-result), and a declined
// result that is destroyed without being tested or returned (a `(void)`
// cast, std::ignore) is recorded (record_dropped_decline), so a kernel that
// then returns true raises at its first such call. Testing it (`if (!r)`,
// reason()) counts as using it: a kernel may decline in one path and compute
// in another.
class [[nodiscard(
    "a kernel's helper can decline the call: return its result (`return binary_loop<T>(...);`) "
    "or test it (`if (auto r = elementwise_ok(...); !r) return r;`)")]] KernelResult {
 public:
  // true: computed; false: declined, with no reason given. Exactly bool: an
  // int or a pointer is not a result.
  template <std::same_as<bool> B>
  KernelResult(B computed) noexcept  // NOLINT: implicit by design
      : reason_(computed ? nullptr : kNoReason) {}

  KernelResult(KernelResult&& other) noexcept : reason_(other.reason_), used_(other.used_) {
    other.used_ = true;
  }
  KernelResult(const KernelResult&) = delete;
  KernelResult& operator=(const KernelResult&) = delete;
  KernelResult& operator=(KernelResult&&) = delete;

  ~KernelResult() {
    if (reason_ != nullptr && !used_) [[unlikely]] record_dropped_decline(reason_);
  }

  // Whether the kernel computed the result.
  explicit operator bool() const noexcept {
    used_ = true;
    return reason_ == nullptr;
  }

  // Why the call was declined; null when it was computed.
  const char* reason() const noexcept {
    used_ = true;
    return reason_;
  }

  static constexpr const char* kNoReason = "the kernel declined without giving a reason";

 private:
  friend KernelResult decline(const char* reason) noexcept;
  struct Declined {};
  KernelResult(Declined, const char* reason) noexcept
      : reason_(reason != nullptr ? reason : kNoReason) {}

  const char* reason_;
  mutable bool used_ = false;
};

// Declines the call, saying why (a static string: declining allocates
// nothing): `return decline("out's shape is not input's shape");`.
inline KernelResult decline(const char* reason) noexcept {
  return KernelResult(KernelResult::Declined{}, reason);
}

}  // namespace infini::ops::native

#endif  // INFINI_OPS_CORE_DECLINE_H_
