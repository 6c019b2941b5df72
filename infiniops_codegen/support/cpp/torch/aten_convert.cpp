// The library's core <-> ATen conversions (torch/aten_convert.h), the
// infiniops_aten object of support/CMakeLists.txt: one translation unit, as
// before the conversions were split by concept. The build compiles it at
// -O3 with the shards' precompiled header, the bridge cache keeps its object
// as aten_convert.cpp.o, and the module reaches it through the library's
// table (torch/library_link.h). Each concept's definitions are in its own
// file under torch/aten/, included here and compiled nowhere else.
#ifdef INFINI_OPS_LIBRARY_LINK
#error "aten_convert.cpp is the library's: compile it without INFINI_OPS_LIBRARY_LINK"
#endif

#include "torch/aten_convert.h"

#include "torch/aten/handles.cpp"
#include "torch/aten/dtype_device.cpp"
#include "torch/aten/value_args.cpp"
#include "torch/aten/from_blob.cpp"
#include "torch/aten/tensor_args.cpp"
#include "torch/aten/output_checks.cpp"
#include "torch/aten/direct_mode.cpp"
#include "torch/aten/results.cpp"
#include "torch/aten/dispatch_support.cpp"
#include "torch/aten/library_table.cpp"
