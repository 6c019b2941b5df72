// A wrapper's scalar arguments as ATen's (value_args.h).
// Part of the library's ATen conversions: compiled within torch/aten_convert.cpp
// (one translation unit), not on its own.
#include "torch/aten/value_args.h"

namespace infini::ops::torch_bridge {

at::Scalar to_aten(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::kBool: return at::Scalar(s.to_bool());
    case Scalar::Kind::kInt: return at::Scalar(s.to_int());
    case Scalar::Kind::kFloat: return at::Scalar(s.to_double());
    case Scalar::Kind::kComplex:
      return at::Scalar(c10::complex<double>(s.to_complex()));
  }
  throw ValueError("unknown scalar kind");
}

}  // namespace infini::ops::torch_bridge
