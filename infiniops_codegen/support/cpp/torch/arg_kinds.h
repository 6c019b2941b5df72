#pragma once
// Python -> core argument conversion for the generated bindings: one traits
// type per argument kind (the `converter` of infiniops_codegen/arg_kinds.py
// names it) and one entry point, arg<Kind>(), for every form a parameter
// takes:
//
//   arg<K>(obj, sig, i)        no default: absent is PyTorch's TypeError
//   arg<K>(obj, sig, i, dflt)  with a default: absent gives dflt
//
// An optional kind is Optional<K>: None gives std::nullopt, so `T? x=None`
// is arg<Optional<K>>(..., std::nullopt) and `T? x=3` takes 3 when absent
// and nullopt for None. A kind is a struct with
//
//   using value = ...;  // what the library's API takes (or converts from)
//   static value unpack(PyObject* obj, const Signature& sig, int i);
//
// unpack gets a present argument (never null) and raises PyTorch's
// exception, naming the op and the parameter, for a bad value. Free of ATen
// headers so the bindings TU compiles fast; unpack of most kinds is in
// unpack_tensors.cpp, unpack_numbers.cpp and unpack_str_dtype.cpp.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/core.h"
#include "torch/signature.h"
#include "torch/unpack_numbers.h"
#include "torch/unpack_str_dtype.h"
#include "torch/unpack_tensors.h"

namespace infini::ops::torch_bridge {

namespace kinds {

struct Tensor {
  using value = ::infini::ops::Tensor;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_tensor(obj, sig, i, sig.borrow_tensors);
  }
};

struct TensorList {
  using value = TensorListArg;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_tensor_list(obj, sig, i);
  }
};

// Tensor?[]: a list whose elements may be None (not an optional list).
struct TensorOptList {
  using value = OptionalTensorListArg;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_tensor_opt_list(obj, sig, i);
  }
};

struct Scalar {
  using value = ::infini::ops::Scalar;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_scalar(obj, sig, i);
  }
};

struct ScalarList {
  using value = ScalarListArg;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_scalar_list(obj, sig, i);
  }
};

// An exact int that fits: its value in a few instructions (any other
// object: the converter's slow path).
[[gnu::always_inline]] inline bool exact_int(PyObject* obj, int64_t& value) {
  if (!PyLong_CheckExact(obj)) return false;
  int overflow = 0;
  value = PyLong_AsLongLongAndOverflow(obj, &overflow);
  return overflow == 0;
}

struct Int {
  using value = int64_t;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    value v;
    return exact_int(obj, v) ? v : unpack_int_arg(obj, sig, i);
  }
};

// The same value as Int, but PyTorch's parser takes more for it (any
// __index__), as the schema's `SymInt` asks.
struct SymInt {
  using value = int64_t;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    value v;
    return exact_int(obj, v) ? v : unpack_symint(obj, sig, i);
  }
};

// int[N] (N > 0: one int stands for N copies of it) or int[] (N = 0);
// Symbolic: SymInt[N].
template <std::size_t N, bool Symbolic = false>
struct IntList {
  using value = IntListArg;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return IntListArg(unpack_int_list(obj, sig, i, N, Symbolic));
  }
  // As PyTorch's parser: None stands for an empty default (`int[1] dim=[]`).
  static bool none_is_default(const value& dflt) { return dflt.values.size() == 0; }
};
template <std::size_t N>
using SymIntList = IntList<N, true>;

struct Float {
  using value = double;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_float(obj, sig, i);
  }
};

struct FloatList {
  using value = FloatListArg;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_float_list(obj, sig, i);
  }
};

struct Bool {
  using value = bool;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_bool(obj, sig, i);
  }
};

template <std::size_t N>
struct BoolArray {
  using value = std::array<bool, N>;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    value result{};
    unpack_bool_array(obj, sig, i, result.data(), N);
    return result;
  }
};

struct Str {
  using value = std::string_view;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_str(obj, sig, i);
  }
};

struct Dtype {
  using value = DataType;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    return unpack_dtype(obj, sig, i);
  }
};

// implementation= of every binding: "default", "native" or "torch"; None
// means the default. A literal in the caller's code is the interned string:
// one pointer comparison.
struct Implementation {
  using value = ::infini::ops::Implementation;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    for (value v : {value::kTorch, value::kNative, value::kDefault}) {
      if (obj == g_implementation_names[static_cast<int>(v)]) return v;
    }
    return unpack_implementation(obj, sig, i);
  }
  static bool none_is_default(const value&) { return true; }
};

// `K?`: None (or an absent argument with a None default) is std::nullopt.
template <class K>
struct Optional {
  using value = std::optional<typename K::value>;
  static value unpack(PyObject* obj, const Signature& sig, int i) {
    if (obj == Py_None) return std::nullopt;
    return K::unpack(obj, sig, i);
  }
};

}  // namespace kinds

template <class K>
[[gnu::always_inline]] inline typename K::value arg(PyObject* obj, const Signature& sig,
                                                    int i) {
  if (obj == nullptr) [[unlikely]] missing(sig, i);
  return K::unpack(obj, sig, i);
}

template <class K>
[[gnu::always_inline]] inline typename K::value arg(PyObject* obj, const Signature& sig,
                                                    int i, typename K::value dflt) {
  if (obj == nullptr) return dflt;
  if constexpr (requires { K::none_is_default(dflt); }) {
    if (obj == Py_None && K::none_is_default(dflt)) return dflt;
  }
  return K::unpack(obj, sig, i);
}

}  // namespace infini::ops::torch_bridge
