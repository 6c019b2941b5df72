#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_OBSERVE_H_
#define INFINI_OPS_CORE_OBSERVE_H_
// What ran where (docs/observability.md): call tracing, counters and the
// strict native mode. Off, a call pays one load and branch of a global flag
// where it starts and one where it picks its implementation; everything
// else happens only while something observes (observing()).
//
// One observed call is a Call on its caller's stack: the outermost layer
// that sees the call (the Python binding, else the library's dispatch for a
// C++ caller) opens it, the layers below note on it what they did (which
// implementation, how the tensors reached ATen), and closing it writes the
// trace line and counts it. Its state (the flags, the current call of each
// thread, the counters, the trace file) is the library's, defined once,
// beside its dispatch (runtime/observe_state.cpp); the Python module reaches
// it through the library's link table (torch/library_link.h).

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/core.h"

namespace infini::ops::observe {

// Bits of flags(): what observes.
inline constexpr unsigned kCount = 1u;   // ops.reset_stats(), INFINIOPS_STATS
inline constexpr unsigned kTrace = 2u;   // ops.trace(), INFINIOPS_TRACE
inline constexpr unsigned kStrict = 4u;  // ops.require_native(), INFINIOPS_REQUIRE_NATIVE

#ifdef INFINI_OPS_LIBRARY_LINK
// The Python module's view of its library's flags (library_link.cpp).
inline namespace module_side {
extern std::atomic<unsigned>& g_flags;
}  // namespace module_side
#else
extern std::atomic<unsigned> g_flags;
#endif

[[gnu::always_inline]] inline bool observing() noexcept {
  return g_flags.load(std::memory_order_relaxed) != 0;
}

// What ran the call.
enum class Ran : uint8_t { kUnknown, kNative, kComposite, kTorch };
// How its tensors reached the kernel: the caller's TensorImpls borrowed by
// the binding (lane), the at::Tensor each Python tensor carries (handle), an
// at::Tensor rebuilt over the memory (from_blob: tensors made in C++; a
// native kernel takes those as they are, which the counters call "core").
enum class Route : uint8_t { kUnknown, kLane, kHandle, kFromBlob };
// How a call that PyTorch ran reached ATen's kernel.
enum class AtenCall : uint8_t { kUnknown, kDirect, kDispatcher };

constexpr std::string_view to_string(Ran r) {
  switch (r) {
    case Ran::kNative: return "native";
    case Ran::kComposite: return "composite";
    case Ran::kTorch: return "torch";
    case Ran::kUnknown: break;
  }
  return "unknown";
}
constexpr std::string_view to_string(Route r) {
  switch (r) {
    case Route::kLane: return "lane";
    case Route::kHandle: return "handle";
    case Route::kFromBlob: return "from_blob";
    case Route::kUnknown: break;
  }
  return "unknown";
}
constexpr std::string_view to_string(AtenCall a) {
  switch (a) {
    case AtenCall::kDirect: return "direct";
    case AtenCall::kDispatcher: return "dispatcher";
    case AtenCall::kUnknown: break;
  }
  return "";
}

// Whether the torch fallback would reuse t's handle (else: from_blob).
// Defined by the torch bridge.
bool reuses_handle(const Tensor& t) noexcept;

// One observed call.
struct Call {
  const char* op = nullptr;    // the library's name ("add")
  const char* aten = nullptr;  // ATen's overload ("add.out"); null: a composite
  Ran ran = Ran::kUnknown;
  Route route = Route::kUnknown;
  AtenCall aten_call = AtenCall::kUnknown;
  bool traced = false;        // open() sets it: the text below is wanted
  bool described = false;     // tensors below were filled in
  bool unaddressable = false;  // a tensor the library must not address
  std::string device;          // of the first tensor ("cpu", "nvidia:0")
  std::string tensors;         // JSON objects, comma-separated
  std::string declined;        // why the native kernel did not run
  std::string error;           // what the call raised

  // One tensor argument (JSON: name, dtype, shape); also decides the route
  // of a call whose tensors came as core Tensors.
  void arg(const char* name, const Tensor& t) {
    if (!t.addressable()) unaddressable = true;
    if (route == Route::kUnknown) route = Route::kHandle;
    if (route == Route::kHandle && !reuses_handle(t)) route = Route::kFromBlob;
    if (!traced) return;  // counted only
    if (device.empty()) {
      device = std::string(to_string(t.device().type));
      if (t.device().index >= 0) device += ":" + std::to_string(t.device().index);
    }
    if (!tensors.empty()) tensors += ", ";
    tensors += "{\"name\": \"";
    tensors += name;
    tensors += "\", \"dtype\": \"";
    tensors += to_string(t.dtype());
    tensors += "\", \"shape\": [";
    for (std::size_t k = 0; k < t.shape().size(); ++k) {
      if (k) tensors += ", ";
      tensors += std::to_string(t.shape()[k]);
    }
    tensors += "]}";
  }
  void arg(const char* name, const std::optional<Tensor>& t) {
    if (t) arg(name, *t);
  }
  void arg(const char* name, std::span<const Tensor> ts) {
    for (const Tensor& t : ts) arg(name, t);
  }
  void arg(const char* name, std::span<const std::optional<Tensor>> ts) {
    for (const auto& t : ts) arg(name, t);
  }
};

// One row of the counters: calls of op that ran on implementation
// ("native", "composite", "torch") by path ("handle", "lane+direct", ...).
struct Count {
  std::string op;
  std::string implementation;
  std::string path;
  uint64_t calls;
};

// The library's observation, as one table (its C++ API: observation() in
// ops.h; its Python module reaches it through the library's link table).
struct Control {
  std::atomic<unsigned>* flags;
  bool (*open)(Call&) noexcept;
  void (*close)(Call&) noexcept;
  Call* (*current)() noexcept;
  // Counters since the last reset_stats(count), which also starts (true)
  // or stops (false) counting.
  std::vector<Count> (*stats)();
  void (*reset_stats)(bool count);
  // Trace to a file (path), or keep the lines (keep_lines) for end_trace();
  // end_trace() returns them and goes back to INFINIOPS_TRACE's sink.
  void (*trace_to)(const char* path, bool keep_lines);
  std::vector<std::string> (*end_trace)();
  // Calls that would fall back raise: every op (all), or these ops; (false,
  // {}) switches the strict mode off.
  void (*require_native)(bool all, std::vector<std::string> ops);
  bool (*strict)(const char* op) noexcept;
};

// The library's table (runtime/observe_state.cpp).
extern const Control kControl;

// The library's side, defined beside its dispatch (runtime/observe_state.cpp);
// the Python module's forward to its library's (library_link.cpp).
// Opens c as this thread's current call; false when one is open already
// (c is then a nested layer's, and only fills in what the outer one lacks).
bool open(Call& c) noexcept;
// Closes c (opened): counts it and writes its trace line.
void close(Call& c) noexcept;
// This thread's open call, or null.
Call* current() noexcept;
// Whether a call of op that falls back must raise (ops.require_native).
bool strict(const char* op) noexcept;

// The dispatch's and the fallback's notes: each one check when nothing
// observes.
[[gnu::always_inline]] inline void note(Ran ran) noexcept {
  if (observing()) [[unlikely]] {
    if (Call* c = current()) c->ran = ran;
  }
}
[[gnu::always_inline]] inline void note(Route route) noexcept {
  if (observing()) [[unlikely]] {
    if (Call* c = current()) c->route = route;
  }
}
[[gnu::always_inline]] inline void note(AtenCall how) noexcept {
  if (observing()) [[unlikely]] {
    if (Call* c = current()) c->aten_call = how;
  }
}

// One tensor argument of a call, by reference, for dispatch() (type-erased: the
// dispatch of every op builds a list of them without a template each).
struct Arg {
  enum Kind : uint8_t { kTensor, kOptional, kList, kOptionalList };
  const char* name;
  const void* value;
  Kind kind;
  Arg(const char* n, const Tensor& t) noexcept : name(n), value(&t), kind(kTensor) {}
  Arg(const char* n, const std::optional<Tensor>& t) noexcept
      : name(n), value(&t), kind(kOptional) {}
  Arg(const char* n, const std::span<const Tensor>& t) noexcept
      : name(n), value(&t), kind(kList) {}
  Arg(const char* n, const std::span<const std::optional<Tensor>>& t) noexcept
      : name(n), value(&t), kind(kOptionalList) {}
};

// A layer of the library's dispatch (generated/ops.cpp), while something
// observes: opens the call for a C++ caller and runs it inside (call: the
// dispatch again, which then finds it open), returning true; describes the
// tensors of a call the binding opened, returning false (go on). Out of
// line, and no template per op: each op's dispatch only builds its list.
bool dispatch(const char* op, const char* aten, std::initializer_list<Arg> args,
              void (*call)(void*), void* f);

template <class F>
bool dispatch(const char* op, const char* aten, std::initializer_list<Arg> args, F&& call) {
  return dispatch(
      op, aten, args, [](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); }, &call);
}

}  // namespace infini::ops::observe

#endif  // INFINI_OPS_CORE_OBSERVE_H_
