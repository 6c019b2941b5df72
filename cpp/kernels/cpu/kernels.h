#pragma once

#include "core/scalar.h"
#include "core/tensor.h"

// Hand-written CPU kernels for float32, float16 and bfloat16 with arbitrary
// strides. Each returns true when it computed the result and false when it
// does not handle these inputs (other dtype, mixed dtypes, not on the CPU,
// unexpected out shape, overlapping out, ...), so the caller falls back to
// PyTorch, which then computes the result or raises its own error.
//
// The code generator emits identical declarations; keep them in sync.
namespace infini::ops::native::cpu {

// out = input + alpha * other, input/other broadcast to out's shape.
bool add(const Tensor& input, const Tensor& other, const Scalar& alpha,
         Tensor& out);

// out = input * other, input/other broadcast to out's shape.
bool mul(const Tensor& input, const Tensor& other, Tensor& out);

// out = x * sigmoid(x); out has input's shape.
bool silu(const Tensor& input, Tensor& out);

// Over the last dim: out = x / sqrt(mean(x^2) + eps) * weight, weight 1-D of
// the last dim's size.
bool rms_norm(const Tensor& input, const Tensor& weight, double eps,
              Tensor& out);

// input [..., 2d] -> out [..., d] = silu(input[..., :d]) * input[..., d:].
bool silu_and_mul(const Tensor& input, Tensor& out);

}  // namespace infini::ops::native::cpu
