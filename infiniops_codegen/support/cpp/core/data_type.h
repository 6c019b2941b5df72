#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_DATA_TYPE_H_
#define INFINI_OPS_CORE_DATA_TYPE_H_

// DataType: the element types a Tensor can hold, with element_size(),
// to_string(), is_floating_point(), is_integral() and is_complex(). All of it
// is generated from the dtype table (infiniops_codegen/data/dtypes.yaml) into
// generated/dtype_table.h: add or change a dtype there, then run
// `infiniops-codegen generate`. Compiling the core therefore needs the
// generated directory on the include path (-I generated), as the CMake
// project and tests/test_core.py give it; the table is torch-free.
#include "dtype_table.h"

#endif  // INFINI_OPS_CORE_DATA_TYPE_H_
