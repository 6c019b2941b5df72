#pragma once
// Number arguments of the generated bindings and their lists, Python ->
// core: Scalar, Scalar[], int, SymInt, int[N], SymInt[N], float, float[],
// bool and bool[N] (their kinds: arg_kinds.h). Only Python.h and the core:
// the bindings TU stays free of torch's headers; the converters are in
// unpack_numbers.cpp.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "core/core.h"
#include "torch/signature.h"
#include "torch/small_list.h"

namespace infini::ops::torch_bridge {

// Storage of the list kinds, as unpack_tensors.h's.
class ScalarListArg {
 public:
  SmallList<Scalar, 8> items;
  operator std::span<const Scalar>() const { return {items.data(), items.size()}; }
};

// Up to 8 values inline (no heap allocation for usual dims).
class IntListArg {
 public:
  IntListArg() = default;
  explicit IntListArg(Dims v) : values(std::move(v)) {}
  IntListArg(std::initializer_list<int64_t> v) : values(v) {}  // schema defaults
  Dims values;
  operator std::span<const int64_t>() const { return values.span(); }
};

class FloatListArg {
 public:
  SmallList<double, 8> items;
  operator std::span<const double>() const { return {items.data(), items.size()}; }
};

Scalar unpack_scalar(PyObject* obj, const Signature& sig, int i);
ScalarListArg unpack_scalar_list(PyObject* obj, const Signature& sig, int i);

// `int`: an int (not a bool), a numpy integer or a 0-dim integer tensor.
int64_t unpack_int_arg(PyObject* obj, const Signature& sig, int i);
// `SymInt`: an int too takes any object with __index__ (1-element integer
// tensors included), whose __index__ runs here.
int64_t unpack_symint(PyObject* obj, const Signature& sig, int i);
// What PyTorch's parser does to a SymInt (list: an int list's first
// element) while it checks every argument, before it converts any: it calls
// __index__ of anything but an int (TypeError when that fails). The
// bindings of several-output ops run it before they take out= given as a
// list, which PyTorch reads between checking and converting.
void index_check_slow(PyObject* obj, const Signature& sig, int i, bool list);
[[gnu::always_inline]] inline void index_check(PyObject* obj, const Signature& sig, int i,
                                               bool list) {
  if (obj == nullptr || PyLong_CheckExact(obj)) return;  // nothing to call
  if (list && PyList_CheckExact(obj) && PyList_GET_SIZE(obj) > 0 &&
      PyLong_CheckExact(PyList_GET_ITEM(obj, 0))) {
    return;
  }
  index_check_slow(obj, sig, i, list);
}
// size: N of an int[N] parameter (one int is then repeated N times), else 0;
// symint: a SymInt[] parameter.
Dims unpack_int_list(PyObject* obj, const Signature& sig, int i, std::size_t size,
                     bool symint);
double unpack_float(PyObject* obj, const Signature& sig, int i);
FloatListArg unpack_float_list(PyObject* obj, const Signature& sig, int i);
bool unpack_bool(PyObject* obj, const Signature& sig, int i);
void unpack_bool_array(PyObject* obj, const Signature& sig, int i, bool* out,
                       std::size_t n);

}  // namespace infini::ops::torch_bridge
