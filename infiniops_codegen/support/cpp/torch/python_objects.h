#pragma once
// Python objects read as torch's argument parser reads them, shared by the
// argument converters (unpack_*.h) and overload resolution (overloads.cpp):
// type names for errors, tensors by their real type, numpy scalars, list
// arguments and their items, ints and floats through their own methods.
// Only Python.h: the bindings TU stays free of torch's headers; the
// definitions are in python_objects.cpp.

#include <cstdint>
#include <optional>

#include "torch/signature.h"

namespace infini::ops::torch_bridge {

// The name of obj's type, for error messages.
const char* type_name(PyObject* obj);

// A torch.Tensor or subclass instance, by its real type: unlike
// THPVariable_Check (isinstance), never runs Python code (a __class__
// property, a metaclass's __instancecheck__), so it is safe where pointers
// into other arguments are held, and an object only pretending to be a
// tensor is never unpacked as one.
bool tensor_object(PyObject* obj);

// numpy scalars, which PyTorch's parser takes as numbers: an integer; one of
// an integer, bool, floating or complex type. Never import numpy.
bool numpy_int(PyObject* obj);
bool numpy_scalar(PyObject* obj);

// A list or tuple, as PyTorch's parser takes for every list parameter (a
// list subclass's own __getitem__ and __len__ are not called, as there).
inline bool list_or_tuple(PyObject* obj) { return PyList_Check(obj) || PyTuple_Check(obj); }

// The items of a list argument, read once: a new tuple holding them when
// converting one may run Python code (which could shrink the list and free
// the items still to read), else the list itself. Holds a reference.
class Items {
 public:
  Items(PyObject* seq, bool snapshot)
      : seq_(snapshot && PyList_Check(seq) ? PyList_AsTuple(seq) : seq) {
    if (seq_ == nullptr) throw PythonException();
    if (seq_ == seq) Py_INCREF(seq_);
  }
  ~Items() { Py_DECREF(seq_); }
  Items(const Items&) = delete;
  Items& operator=(const Items&) = delete;
  Py_ssize_t size() const { return PySequence_Fast_GET_SIZE(seq_); }
  PyObject* operator[](Py_ssize_t k) const { return PySequence_Fast_GET_ITEM(seq_, k); }

 private:
  PyObject* seq_;
};

// An int (or int subclass, whose __index__ and __int__ are not called, as in
// PyTorch).
int64_t long_value(PyObject* obj, const Signature& sig, int i);

// What obj's __index__ gives (Python code may run); nullopt with no Python
// error set when it has none or it raised.
std::optional<int64_t> index_value(PyObject* obj, const Signature& sig, int i);

// float(obj) by its __float__ (an int subclass's own, numpy's): Python code
// may run; what it raises is raised as it is, as PyTorch lets it through.
double float_value(PyObject* obj);

}  // namespace infini::ops::torch_bridge
