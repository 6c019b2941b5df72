#pragma once

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
