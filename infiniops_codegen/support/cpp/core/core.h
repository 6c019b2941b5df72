#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_CORE_CORE_H_
#define INFINI_OPS_CORE_CORE_H_

// Everything the core offers; torch-free, so any backend or test can use it.
#include "core/data_type.h"
#include "core/decline.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle.h"
#include "core/implementation.h"
#include "core/scalar.h"
#include "core/small_dims.h"
#include "core/stream.h"
#include "core/tensor.h"

#endif  // INFINI_OPS_CORE_CORE_H_
