#pragma once
// Python -> core argument conversion for the generated bindings: an umbrella
// over one header per concept, under the name the generated bindings include
// (and infiniops_codegen's arg_kinds, whose converters name its kinds):
//
//   arg_kinds.h         the kinds' traits and arg<Kind>(), every binding's entry
//   unpack_tensors.h    Tensor, Tensor[], Tensor?[]
//   unpack_numbers.h    Scalar, int, SymInt, float, bool and their lists
//   unpack_str_dtype.h  str (implementation= too) and torch.dtype
//   python_objects.h    what those read of Python objects (numpy scalars, ...)
//   lane_checks.h       whether a call takes the lane (lane.h)
//   functional_call.h   calls without out=
//
// New code includes the header of what it uses. Free of ATen headers (every
// one of them) so the bindings TU compiles fast.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string_view>

#include "core/core.h"
#include "torch/lane.h"
#include "torch/signature.h"
#include "torch/small_list.h"

#include "torch/arg_kinds.h"
#include "torch/functional_call.h"
#include "torch/lane_checks.h"
#include "torch/python_objects.h"
#include "torch/unpack_numbers.h"
#include "torch/unpack_str_dtype.h"
#include "torch/unpack_tensors.h"
