// The library's table for its Python module (torch/library_link.h): the
// addresses of its switches and conversions.
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/library_link.h"

#include "core/observe.h"
#include "torch/aten/direct_mode.h"
#include "torch/aten/dtype_device.h"
#include "torch/aten/from_blob.h"
#include "torch/aten/handles.h"
#include "torch/lane.h"

namespace infini::ops::torch_bridge {

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
