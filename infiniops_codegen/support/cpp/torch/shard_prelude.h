#pragma once
// What every fallback shard includes first, and the build's precompiled
// header (INFINI_OPS_PCH): the ATen conversions, and the headers that the
// per-operator headers include (ATen/ops/<op>.h besides its own <op>_ops.h,
// <op>_cpu_dispatch.h, <op>_meta_dispatch.h). Precompiled here, they are
// parsed once per build instead of once per shard, so a shard parses little
// more than its ops' declarations (docs/building.md).
// tests/test_runtime_build_structure.py checks this list against the
// installed torch's headers.
#include "torch/aten_convert.h"

#include <ATen/Context.h>
#include <ATen/DeviceGuard.h>
#include <ATen/TensorUtils.h>
#include <ATen/TracerMode.h>
#include <ATen/core/ATen_fwd.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/Scalar.h>
#include <c10/core/Storage.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/Deprecated.h>

#include <optional>
#include <string_view>
