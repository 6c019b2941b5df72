#pragma once
// Also guarded: two libraries' copies of this header (include/<name>/...)
// may meet in one translation unit.
#ifndef INFINI_OPS_TORCH_ATEN_CONVERT_H_
#define INFINI_OPS_TORCH_ATEN_CONVERT_H_
// Core <-> ATen conversions for the generated fallback wrappers, the torch
// API (torch_api.h) and the bridge: an umbrella over torch/aten/, one header
// per concept. The generated sources include this name (so do C++ callers
// of an installed library, and shard_prelude.h); new code includes the
// header of what it uses. Only light ATen headers: wrapper TUs compile under
// TORCH_ASSERT_ONLY_METHOD_OPERATORS.

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/util/OptionalArrayRef.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <atomic>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "core/core.h"
#include "core/observe.h"
#include "torch/lane.h"

// A core Tensor's torch handle, and ATen -> core.
#include "torch/aten/handles.h"
// Dtypes and devices, both ways.
#include "torch/aten/dtype_device.h"
// The from_blob path and its wrapper pool.
#include "torch/aten/from_blob.h"
// A wrapper's arguments: tensors, then everything else.
#include "torch/aten/tensor_args.h"
#include "torch/aten/value_args.h"
// Overlaps, resized outputs and version counters around the ATen call.
#include "torch/aten/output_checks.h"
// at::cpu:: calls without the dispatcher.
#include "torch/aten/direct_mode.h"
// Outputs of calls without out=.
#include "torch/aten/results.h"

#endif  // INFINI_OPS_TORCH_ATEN_CONVERT_H_
