#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_LIBRARY_LINK_H_
#define INFINI_OPS_TORCH_LIBRARY_LINK_H_
// What the Python module uses of its C++ library's torch bridge, as one table
// of addresses.
//
// Every library holds the same hand-written core and bridge, in the namespace
// infini::ops. A library with a name of its own (project.LibraryNames) keeps
// them local (its link's version script): two libraries then load into one
// process, and link into one program, without a clash, and each keeps its own
// switches and wrapper pool. Its module still needs a few of them, and shares
// the library's state: it reaches them through this table, which the library
// hands out under its own name (`<namespace>::torch_bridge_link()`, defined in
// the generated ops.cpp). The module's side (library_link.cpp, compiled with
// INFINI_OPS_LIBRARY_LINK) is the same object for every project, so the bridge
// is built once for all of them.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace at {
class Tensor;
}
namespace c10 {
enum class ScalarType : int8_t;
}

namespace infini::ops {
class Tensor;
enum class DataType : int8_t;
}  // namespace infini::ops
namespace infini::ops::observe {
struct Control;
}  // namespace infini::ops::observe

namespace infini::ops::torch_bridge {

class Results;
struct WrapperPoolStats;

struct LibraryLink {
  // sizeof(LibraryLink) when the library was compiled: a module refuses a
  // library of another layout (one from another release of the tool).
  std::size_t size;
  const char* torch_framework;  // kTorchFramework
  std::atomic<bool>* handle_reuse;
  std::atomic<bool>* direct_mode;
  std::atomic<bool>* wrapper_pool;
  bool (*framework_mode_active)() noexcept;
  DataType (*from_aten_dtype)(c10::ScalarType);
  Tensor (*from_aten)(const at::Tensor&);
  Tensor (*from_aten_borrowed)(const at::Tensor&);
  Tensor (*from_aten_opaque)(const at::Tensor&);
  at::Tensor (*from_blob)(const Tensor&);
  WrapperPoolStats (*wrapper_pool_stats)() noexcept;
  void (*clear_wrapper_pool)() noexcept;
  void (*clear_results)(Results&);
  const observe::Control* observation;  // the library's (core/observe.h)
};

// The library's table (torch/aten/library_table.cpp).
extern const LibraryLink kLibraryLink;

// The module's library's table: defined by the generated bindings.cpp (it
// knows the library's name), used by library_link.cpp.
const LibraryLink& linked_library() noexcept;

// The module's library has this table's layout (library_link.cpp): the
// module's init function raises ImportError otherwise, before any call.
bool library_link_matches() noexcept;

}  // namespace infini::ops::torch_bridge

#endif  // INFINI_OPS_TORCH_LIBRARY_LINK_H_
