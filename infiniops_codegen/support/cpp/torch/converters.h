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
// converters.cpp.

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

namespace infini::ops::torch_bridge {

// Storage of the list kinds: a few items inline, no heap allocation for
// usual lengths; each converts to the span the library's API takes.
class TensorListArg {
 public:
  SmallList<Tensor, 4> items;
  operator std::span<const Tensor>() const { return {items.data(), items.size()}; }
  operator std::span<Tensor>() { return {items.data(), items.size()}; }
};

class OptionalTensorListArg {
 public:
  SmallList<std::optional<Tensor>, 4> items;
  operator std::span<const std::optional<Tensor>>() const {
    return {items.data(), items.size()};
  }
};

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

// The lane (lane.h).
// Whether the converted arguments besides the tensors allow the lane: no
// stream, and an implementation the lane serves ("torch"; or the default
// when the op has no native kernel for the CPU, since every lane tensor is a
// CPU tensor).
inline bool lane_allows(Implementation impl, Stream stream, bool default_is_aten) noexcept {
  return !stream &&
         (impl == Implementation::kTorch || (default_is_aten && impl == Implementation::kDefault));
}

// Fills refs (one per tensor parameter, in parameter order) and lists (one
// per tensor-list parameter, elements stored in items, kLaneListItems at
// most) and returns true when every tensor argument is exactly a
// torch.Tensor that ATen's CPU
// kernels take as it is (dense, with storage, no functionality key beyond
// autograd and autocast, not an inference tensor, not requiring grad, not a
// forward-AD dual, of a dtype the library holds), handle reuse is on, and
// the call may keep the GIL: fewer than 32,768 elements in all (ATen's grain
// size: no intra-op parallelism below it) and either an op whose kernel's
// loops see only raw pointers (Signature::borrow_tensors) or one intra-op
// thread, so that no other thread can need the GIL to copy a borrowed
// tensor while this one holds it. False: the general path runs the call.
bool lane_tensors(const Signature& sig, PyObject* const* slots, void** refs,
                  TensorListRef* lists = nullptr, void** items = nullptr) noexcept;

// Calls without out= (Signature::out_optional). The tensors of such a call
// go to ATen as they arrived, whatever they are (subclasses, tensors that
// require grad, meta or fake tensors, ...): ATen's functional overload, or
// the op once its outputs are allocated, sees them as torch's own call
// would. CallTensors fills refs (one per tensor parameter but the outputs,
// null for None) and lists (one per tensor-list parameter), raising the
// converters' TypeError for a value that is not a tensor. It borrows the
// TensorImpls where the call keeps the GIL (a small CPU call, as the lane);
// otherwise it holds a reference to each while the GIL is released.
class CallTensors {
 public:
  CallTensors(const Signature& sig, PyObject* const* slots, void** refs,
              TensorListRef* lists = nullptr);
  ~CallTensors();
  CallTensors(const CallTensors&) = delete;
  CallTensors& operator=(const CallTensors&) = delete;
  bool release_gil() const noexcept { return release_gil_; }

 private:
  SmallList<void*, kLaneListItems> items_;  // list elements
  SmallList<void*, 8> owned_;               // references held
  bool release_gil_ = false;
};

// The outputs made by a call without out=, returned: one tensor, or
// several as torch.return_types.<Signature::functional_return_type>.
PyObject* return_results(const Signature& sig, Results& results);

// Outputs allocated for a call without out=, as Python tensors standing in
// the call's out= parameters (filled: a copy of the call's slots).
class NewOutputs {
 public:
  NewOutputs() = default;
  ~NewOutputs();
  NewOutputs(const NewOutputs&) = delete;
  NewOutputs& operator=(const NewOutputs&) = delete;
  // False with a Python error set when wrapping failed.
  bool fill(const Signature& sig, Results& results, PyObject** filled);
  // The op's out= result on these outputs as a call without out= returns
  // it: each output's version back at 0 (a fresh tensor's, as torch's own
  // call returns it), several outputs as torch.return_types.
  // <functional_return_type> instead of <return_type>. Steals result.
  // With none filled (a call that gave out=): result as it is.
  PyObject* returned(const Signature& sig, PyObject* result) {
    return count_ == 0 ? result : returned_filled(sig, result);
  }

 private:
  PyObject* returned_filled(const Signature& sig, PyObject* result);
  PyObject* objects_[Results::kMax];  // the first count_ are set
  int count_ = 0;
};

// The converters of the kinds (converters.cpp). borrow: a tensor's handle
// holds no reference (the argument's Python object keeps it alive for the
// call); list elements always own theirs.
Tensor unpack_tensor(PyObject* obj, const Signature& sig, int i, bool borrow);
TensorListArg unpack_tensor_list(PyObject* obj, const Signature& sig, int i);
OptionalTensorListArg unpack_tensor_opt_list(PyObject* obj, const Signature& sig, int i);
Scalar unpack_scalar(PyObject* obj, const Signature& sig, int i);
ScalarListArg unpack_scalar_list(PyObject* obj, const Signature& sig, int i);
// numpy scalars, which PyTorch's parser takes as numbers: an integer; one of
// an integer, bool, floating or complex type. Never import numpy.
bool numpy_int(PyObject* obj);
bool numpy_scalar(PyObject* obj);

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
// A view into the Python str, which the caller's arguments keep alive.
std::string_view unpack_str(PyObject* obj, const Signature& sig, int i);
DataType unpack_dtype(PyObject* obj, const Signature& sig, int i);
Implementation unpack_implementation(PyObject* obj, const Signature& sig, int i);
// The names of the implementations (to_string), interned, by enumerator
// (init_module).
extern PyObject* g_implementation_names[3];

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
