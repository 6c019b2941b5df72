// What the translation of exceptions (python_errors.h) needs torch's Python
// headers for: torch's own translation of c10 errors.
#include "torch/python_errors.h"

#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>

#include <new>
#include <string>

#include "core/error.h"

namespace infini::ops::torch_bridge {

void raise_python_error(const Signature& sig) noexcept {
  try {
    throw;
  } catch (PythonException& e) {
    e.restore();
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const ImplementationError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.python());  // Python's spelling
  } catch (const NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const OverflowError& e) {
    PyErr_SetString(PyExc_OverflowError, e.what());
  } catch (const Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    if (msg.find("Trying to resize storage that is not resizable") != std::string::npos) {
      // ATen tried to grow an output that came through the from_blob path.
      PyErr_Format(PyExc_RuntimeError,
                   "%s(): an output must be resized, but it has no PyTorch handle "
                   "(from_blob path), so its storage cannot grow; pass an output "
                   "of the result's shape (%s)",
                   sig.op, msg.c_str());
    } else {
      torch::translate_exception_to_python(std::current_exception());
    }
  } catch (...) {
    // c10 errors and the rest: exactly PyTorch's own translation.
    torch::translate_exception_to_python(std::current_exception());
  }
}

}  // namespace infini::ops::torch_bridge
