// The Python module's side of library_link.h: what the bridge and bindings
// use of the library, bound to the library's own through its table. Each name
// here is the module's (its version script keeps infini::ops local), so the
// module and its library share one set of switches and one wrapper pool per
// thread, and another library in the process never sees them.
#ifndef INFINI_OPS_LIBRARY_LINK
#error "library_link.cpp is the Python module's: compile it with INFINI_OPS_LIBRARY_LINK"
#endif

#include "torch/library_link.h"

#include "core/observe.h"
#include "torch/aten/dtype_device.h"
#include "torch/aten/from_blob.h"
#include "torch/aten/handles.h"
#include "torch/lane.h"

namespace infini::ops::torch_bridge {

// Dynamic initialisation when the module is loaded: its library is loaded
// and initialised by then (a DT_NEEDED dependency). Nothing is called through
// it before the module's init function has checked its layout
// (library_link_matches).
const LibraryLink& g_link = linked_library();
inline namespace module_side {
const char& kTorchFramework = *g_link.torch_framework;
std::atomic<bool>& g_handle_reuse = *g_link.handle_reuse;
std::atomic<bool>& g_direct_mode = *g_link.direct_mode;
std::atomic<bool>& g_wrapper_pool = *g_link.wrapper_pool;
}  // namespace module_side

bool library_link_matches() noexcept { return g_link.size == sizeof(LibraryLink); }

bool framework_mode_active() noexcept { return g_link.framework_mode_active(); }
DataType from_aten(c10::ScalarType type) { return g_link.from_aten_dtype(type); }
Tensor from_aten(const at::Tensor& t) { return g_link.from_aten(t); }
Tensor from_aten_borrowed(const at::Tensor& t) { return g_link.from_aten_borrowed(t); }
Tensor from_aten_opaque(const at::Tensor& t) { return g_link.from_aten_opaque(t); }
at::Tensor from_blob(const Tensor& t) { return g_link.from_blob(t); }
WrapperPoolStats wrapper_pool_stats() noexcept { return g_link.wrapper_pool_stats(); }
void clear_wrapper_pool() noexcept { g_link.clear_wrapper_pool(); }
Results::~Results() { g_link.clear_results(*this); }

}  // namespace infini::ops::torch_bridge

namespace infini::ops::observe {
inline namespace module_side {
// A library of another layout (refused by the module's init) has no table.
std::atomic<unsigned> g_never{0};
std::atomic<unsigned>& g_flags = torch_bridge::library_link_matches()
                                     ? *torch_bridge::g_link.observation->flags
                                     : g_never;
}  // namespace module_side
bool open(Call& c) noexcept { return torch_bridge::g_link.observation->open(c); }
void close(Call& c) noexcept { torch_bridge::g_link.observation->close(c); }
Call* current() noexcept { return torch_bridge::g_link.observation->current(); }
bool strict(const char* op) noexcept { return torch_bridge::g_link.observation->strict(op); }
bool reuses_handle(const Tensor& t) noexcept { return torch_bridge::reusable_impl(t) != nullptr; }
}  // namespace infini::ops::observe
