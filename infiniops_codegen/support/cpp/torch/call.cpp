// What the call skeleton (call.h) needs torch's Python headers for: the
// warning handler, Python numbers given for tensors, and bind() itself, which
// hands a call to __torch_function__ (torch_function.h) where wanted and
// translates what it throws (python_errors.h).
#include "torch/call.h"

#include <ATen/ScalarOps.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <new>
#include <string>

#include "core/observe.h"
#include "torch/aten/handles.h"
#include "torch/aten/output_checks.h"
#include "torch/torch_function.h"

namespace infini::ops::torch_bridge {

static_assert(sizeof(torch::PyWarningHandler) <= sizeof(WarningScope),
              "WarningScope storage too small for torch::PyWarningHandler");
static_assert(alignof(torch::PyWarningHandler) <= alignof(WarningScope));

WarningScope::WarningScope() noexcept {
  new (storage_) torch::PyWarningHandler();
}

WarningScope::~WarningScope() noexcept(false) {
  // May throw python_error when a warning filter turns a warning into an
  // error; the bindings call this inside their try block.
  std::launder(reinterpret_cast<torch::PyWarningHandler*>(storage_))->~PyWarningHandler();
}

void own_handle(Tensor& t) {
  if (t.handle().borrowed()) t = Tensor(t);  // a copy owns
}

void WarningScope::set_in_exception() noexcept {
  std::launder(reinterpret_cast<torch::PyWarningHandler*>(storage_))->set_in_exception();
  try {
    throw;
  } catch (const OutputNotResizable&) {
    // ATen resized a from_blob stand-in of the output and warned that the
    // output "was resized"; the caller's tensor was not, and the call fails
    // saying so. Our handler is the current one (any nested one is gone) and
    // is the first member of torch::PyWarningHandler, in storage_.
    c10::WarningHandler* current = c10::WarningUtils::get_warning_handler();
    if (current == reinterpret_cast<c10::WarningHandler*>(storage_)) {
      auto& buffer = static_cast<torch::PyWarningHandler::InternalHandler*>(current)->warning_buffer_;
      std::erase_if(buffer, [](const c10::Warning& w) {
        return w.msg().find("was resized since it had shape") != std::string::npos;
      });
    }
  } catch (...) {
  }
}

PyTypeObject* return_type(const char* name, PyObject** cache) {
  if (*cache == nullptr) {
    PyObject* types = PyImport_ImportModule("torch.return_types");
    if (types == nullptr) return nullptr;
    *cache = PyObject_GetAttrString(types, name);  // kept for good
    Py_DECREF(types);
  }
  return reinterpret_cast<PyTypeObject*>(*cache);
}

PyObject* pack_outputs(const Signature& sig, std::initializer_list<PyObject*> outputs) {
  PyTypeObject* type = nullptr;
  if (sig.return_type != nullptr) {
    type = return_type(sig.return_type, sig.return_type_object);
    if (type == nullptr) return nullptr;
  }
  PyObject* result = type != nullptr ? PyStructSequence_New(type)
                                     : PyTuple_New(static_cast<Py_ssize_t>(outputs.size()));
  if (result == nullptr) return nullptr;
  Py_ssize_t k = 0;
  for (PyObject* obj : outputs) {
    Py_INCREF(obj);
    PyTuple_SET_ITEM(result, k++, obj);  // a structseq is a tuple
  }
  return result;
}

void OutList::take(const Signature& sig, PyObject** slots) {
  PyObject* seq = slots[sig.num_params];
  if (!PyList_Check(seq)) return;  // a tuple cannot change
  if (PyList_GET_SIZE(seq) != sig.num_outs) {
    throw TypeError(std::string(sig.op) + "(): argument 'out' must be a tuple of " +
                    std::to_string(sig.num_outs) + " Tensors, not a list of " +
                    std::to_string(PyList_GET_SIZE(seq)));
  }
  for (int j = 0; j < sig.num_outs && j < static_cast<int>(std::size(items_)); ++j) {
    PyObject* item = PyList_GET_ITEM(seq, j);
    Py_INCREF(item);
    items_[count_++] = item;
    slots[sig.out_params[j]] = item;
  }
}

namespace {

// Python numbers given for tensors (Signature::number_tensor_params), as
// torch's argument parser takes them: a 0-dim tensor marked a wrapped
// number, which type promotion ranks like a Python scalar. Held for the call.
class NumberTensors {
 public:
  ~NumberTensors() {
    for (int k = 0; k < count_; ++k) Py_DECREF(objects_[k]);
  }
  // False with a Python error set.
  bool wrap(const Signature& sig, PyObject** slots) noexcept {
    for (uint64_t bits = sig.number_tensor_params; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      PyObject* obj = slots[i];
      if (obj == nullptr || !(PyFloat_Check(obj) || PyLong_Check(obj) || PyComplex_Check(obj))) {
        continue;
      }
      try {
        at::Scalar scalar;
        if (PyBool_Check(obj)) {
          scalar = at::Scalar(obj == Py_True);
        } else if (PyLong_Check(obj)) {
          const int64_t v = PyLong_AsLongLong(obj);
          if (v == -1 && PyErr_Occurred()) return false;
          scalar = at::Scalar(v);
        } else if (PyComplex_Check(obj)) {
          scalar = at::Scalar(c10::complex<double>(PyComplex_RealAsDouble(obj),
                                                   PyComplex_ImagAsDouble(obj)));
        } else {
          scalar = at::Scalar(PyFloat_AS_DOUBLE(obj));
        }
        at::Tensor t;
        {
          at::AutoDispatchBelowADInplaceOrView guard;
          t = at::scalar_to_tensor(scalar);
        }
        t.unsafeGetTensorImpl()->set_wrapped_number(true);
        PyObject* wrapped = THPVariable_Wrap(std::move(t));
        if (wrapped == nullptr) return false;
        objects_[count_++] = wrapped;
        slots[i] = wrapped;
      } catch (...) {
        raise_python_error(sig);
        return false;
      }
    }
    return true;
  }

 private:
  PyObject* objects_[64];  // the first count_ are set
  int count_ = 0;
};

// A call while something observes (core/observe.h): opened here, so that
// the dispatch and the fallback below note on it what ran; its tensors as
// the caller passed them where the call never reached the dispatch (the
// lane, ATen's functional overload).
PyObject* observed(const Signature& sig, PyObject** slots, Body body) noexcept {
  observe::Call call;
  call.op = sig.op;
  call.aten = sig.aten;
  // require_native: a call of the default implementation that would fall
  // back raises before it runs; for an op without a native kernel that is
  // every call, and the dispatch checks the others. One that returns
  // without reaching a native kernel's dispatch ran in ATen (the lane, the
  // functional overload) and raises after it.
  PyObject* const impl = slots[sig.num_params - 2];
  const bool strict = observe::strict(sig.op) &&
                      (impl == nullptr || impl == Py_None ||
                       (PyUnicode_Check(impl) && PyUnicode_CompareWithASCIIString(impl, "default") == 0));
  if (strict && !sig.has_native) {
    const std::string text = std::string(sig.op) +
                             "(): require_native: the call would fall back to PyTorch, because "
                             "the op has no native kernel";
    PyErr_SetString(PyExc_NotImplementedError, text.c_str());
    return nullptr;
  }
  const bool outer = observe::open(call);
  PyObject* result = nullptr;
  try {
    result = body(slots);
  } catch (...) {
    raise_python_error(sig);
  }
  if (outer && strict && result != nullptr && call.ran == observe::Ran::kUnknown) {
    Py_CLEAR(result);
    const std::string text = std::string(sig.op) +
                             "(): require_native: the call fell back to PyTorch, because "
                             "no native kernel took it (none for this device, or, without "
                             "out=, its outputs cannot be allocated ahead for one)";
    PyErr_SetString(PyExc_NotImplementedError, text.c_str());
  }
  if (!outer) return result;
  if (result == nullptr) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject* text = value != nullptr ? PyObject_Str(value) : nullptr;
    const char* utf8 = text != nullptr ? PyUnicode_AsUTF8(text) : nullptr;
    call.error = utf8 != nullptr ? utf8 : "error";
    Py_XDECREF(text);
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
  }
  try {
    if (!call.described && !call.traced) {
      // Counted only: the tensors' route is all that is wanted.
      if (call.route == observe::Route::kUnknown) {
        call.route = g_handle_reuse.load(std::memory_order_relaxed) ? observe::Route::kHandle
                                                                     : observe::Route::kFromBlob;
      }
    } else if (!call.described) {
      const int n = sig.num_params - 2;  // implementation and stream last
      for (int k = 0; k < n && k < 64; ++k) {
        if (((sig.tensor_params >> k) & 1) == 0 || slots[k] == nullptr ||
            !THPVariable_Check(slots[k])) {
          continue;
        }
        call.arg(sig.names[k], from_aten(THPVariable_Unpack(slots[k])));
      }
    }
  } catch (...) {
    // Out of memory while describing: the call's own result stands.
  }
  observe::close(call);
  return result;
}

}  // namespace

PyObject* bind(const Signature& sig, PyObject* module, PyObject* const* args,
               Py_ssize_t nargs, PyObject* kwnames, PyObject** slots,
               Body body) noexcept {
  if (!parse_args(sig, args, nargs, kwnames, slots)) return nullptr;
  if (const Special special = torch_function_wanted(sig, slots); special != Special::kNone)
      [[unlikely]] {
    if (special != Special::kDispatcherOp) {
      return torch_function(sig, module, args, nargs, kwnames, slots,
                            special == Special::kTracedTorchFunction);
    }
    PyObject* result = dispatcher_op(sig, module, args, nargs, kwnames, slots);
    if (result != Py_NotImplemented) return result;
    Py_DECREF(result);
  }
  NumberTensors numbers;
  if (sig.number_tensor_params != 0 && !numbers.wrap(sig, slots)) return nullptr;
  if (observe::observing()) [[unlikely]] return observed(sig, slots, body);
  try {
    return body(slots);
  } catch (...) {
    raise_python_error(sig);
    return nullptr;
  }
}

}  // namespace infini::ops::torch_bridge
