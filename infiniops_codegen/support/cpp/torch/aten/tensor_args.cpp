// A wrapper's tensor arguments given back or shared (tensor_args.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/tensor_args.h"

#include <new>
#include <utility>

namespace infini::ops::torch_bridge {

void AtenTensor::release() noexcept {
  give_back(std::move(tensor_), key_);
  tensor_.~Tensor();
}

void AtenOptionalTensor::release() noexcept {
  give_back(std::move(*tensor_), key_);
  tensor_.~optional();
}

void AtenTensor::share(const at::Tensor& same) noexcept {
  release();  // this one's own wrapper goes back to the pool
  new (&tensor_) at::Tensor(unowned(same.unsafeGetTensorImpl()));
  pooled_ = false;  // borrowed: nothing to release
}

}  // namespace infini::ops::torch_bridge
