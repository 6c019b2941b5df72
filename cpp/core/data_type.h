#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace infini::ops {

// Element types a Tensor can hold. bool is a dtype of its own: it is never
// folded into uint8 (that silently changes the semantics of e.g. add).
enum class DataType : int8_t {
  kBool,
  kUInt8,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kComplex32,
  kComplex64,
  kComplex128,
  kFloat8E4M3FN,
  kFloat8E5M2,
};

// Size of one element in bytes; 0 only for a value outside the enum.
constexpr std::size_t element_size(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
      return 1;
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kFloat32:
    case DataType::kComplex32:
      return 4;
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat64:
    case DataType::kComplex64:
      return 8;
    case DataType::kComplex128:
      return 16;
  }
  return 0;
}

// Names as PyTorch spells them (torch.<name>), for messages and lookups.
constexpr std::string_view to_string(DataType dtype) {
  switch (dtype) {
    case DataType::kBool:
      return "bool";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUInt16:
      return "uint16";
    case DataType::kUInt32:
      return "uint32";
    case DataType::kUInt64:
      return "uint64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kComplex32:
      return "complex32";
    case DataType::kComplex64:
      return "complex64";
    case DataType::kComplex128:
      return "complex128";
    case DataType::kFloat8E4M3FN:
      return "float8_e4m3fn";
    case DataType::kFloat8E5M2:
      return "float8_e5m2";
  }
  return "unknown";
}

constexpr bool is_floating_point(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E5M2:
      return true;
    default:
      return false;
  }
}

// Mirrors c10::isIntegralType: bool counts only when asked for.
constexpr bool is_integral(DataType dtype, bool include_bool) {
  switch (dtype) {
    case DataType::kBool:
      return include_bool;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
      return true;
    default:
      return false;
  }
}

constexpr bool is_complex(DataType dtype) {
  return dtype == DataType::kComplex32 || dtype == DataType::kComplex64 ||
         dtype == DataType::kComplex128;
}

}  // namespace infini::ops
