#pragma once
// The library's ops as PyTorch operators (docs/compile.md): what the
// generated torch_library.cpp registers with c10::Dispatcher besides its
// per-op kernels. The per-op kernels read their arguments from the boxed
// stack through Args (core values, tensors wrapped with their handle), call
// the library's dispatch and leave the op's returns; the kernels here are
// the same for every op: autograd, functionalization and calls handed to
// ATen's twin. Compiled into the library only (one TU includes it).
#ifndef INFINI_OPS_DISPATCHER_REGISTRATION_H_
#define INFINI_OPS_DISPATCHER_REGISTRATION_H_

#include <ATen/core/enum_tag.h>
#include <ATen/core/stack.h>

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "torch/aten_convert.h"

namespace infini::ops::torch_bridge::dispatcher {

using Stack = torch::jit::Stack;

// The arguments of a boxed call: the last n values of the stack, in schema
// order. Accessors convert one to the library's core type; the tensors are
// wrapped with their handle (from_aten), so the fallback reuses them.
class Args {
 public:
  Args(Stack* stack, std::size_t n) : stack_(*stack), base_(stack->size() - n), n_(n) {}

  const c10::IValue& operator[](std::size_t i) const { return stack_[base_ + i]; }
  bool none(std::size_t i) const { return (*this)[i].isNone(); }

  Tensor tensor(std::size_t i) const;
  std::optional<Tensor> tensor_opt(std::size_t i) const;
  std::vector<Tensor> tensor_list(std::size_t i) const;
  std::vector<std::optional<Tensor>> tensor_opt_list(std::size_t i) const;
  Scalar scalar(std::size_t i) const;
  std::optional<Scalar> scalar_opt(std::size_t i) const;
  std::vector<Scalar> scalar_list(std::size_t i) const;
  int64_t integer(std::size_t i) const;
  std::optional<int64_t> integer_opt(std::size_t i) const;
  std::vector<int64_t> int_list(std::size_t i) const;
  std::optional<std::vector<int64_t>> int_list_opt(std::size_t i) const;
  double real(std::size_t i) const;
  std::optional<double> real_opt(std::size_t i) const;
  std::optional<std::vector<double>> real_list_opt(std::size_t i) const;
  bool boolean(std::size_t i) const;
  std::optional<bool> boolean_opt(std::size_t i) const;
  template <std::size_t N>
  std::array<bool, N> bool_array(std::size_t i) const {
    std::array<bool, N> values{};
    const auto list = (*this)[i].toBoolList();
    for (std::size_t k = 0; k < N && k < list.size(); ++k) values[k] = list.get(k);
    return values;
  }
  std::string_view str(std::size_t i) const;
  std::optional<std::string_view> str_opt(std::size_t i) const;
  DataType dtype(std::size_t i) const;
  std::optional<DataType> dtype_opt(std::size_t i) const;

  // The lane's references (lane.h) for a call of a no-out fallback: the
  // stack keeps the tensors alive for the whole kernel.
  TensorRef ref(std::size_t i) const;
  OptionalTensorRef opt_ref(std::size_t i) const;

  // The op's returns in place of its arguments: the outputs at these
  // indices (out= overloads; none for `-> ()`), or the outputs a no-out
  // fallback made.
  void finish(std::initializer_list<std::size_t> outputs);
  void finish(Results& results);

 private:
  static Scalar to_core(const at::Scalar& s);
  static int64_t to_int(const c10::IValue& v);

  Stack& stack_;
  std::size_t base_;
  std::size_t n_;
};

// Output k of a no-out fallback's allocation, as the library's out= call
// takes it (its handle: the fallback writes the allocated tensor itself).
Tensor result(const Results& r, int k);

// std::optional<std::span<const T>> of an optional list the Args made.
template <class T>
std::optional<std::span<const T>> opt_span(const std::optional<std::vector<T>>& v) {
  if (!v) return std::nullopt;
  return std::span<const T>(*v);
}

// A kernel of the library's own: the generated per-op functions.
using Kernel = void (*)(Stack* stack);

// The registration of one op pair (generated torch_library.cpp).
struct OpEntry {
  const char* out_schema;         // "add.out(Tensor self, ...) -> Tensor(a!)"
  const char* out_name;           // "add.out"
  std::initializer_list<at::Tag> out_tags;
  const char* functional_schema;  // null: no functional overload
  const char* functional_name;    // "add.Tensor"
  std::initializer_list<at::Tag> functional_tags;
  Kernel out_kernel;
  // The functional overload's kernel; null: ATen's twin (aten_functional)
  // computes it, as the library's own call without out= would.
  Kernel functional_kernel;
  // ATen's functional twin ("add.Tensor"): its autograd formula serves
  // ours; null for composites (differentiable: the body on ATen values).
  const char* aten_functional;
  Kernel differentiable;
  // ATen's out= twin ("add.out"), for arguments the library cannot take
  // (a generator, a layout...); null for composites.
  const char* aten_out;
};

// Registers the ops under the namespace, with kernels at the dispatch key of
// each c10 device type in `devices` ("CPU", "CUDA", ...). Once per process;
// the registrations are never undone (they live until exit).
void register_ops(const char* ns, std::span<const OpEntry> ops,
                  std::span<const char* const> devices);

// The hidden arguments (Generator?, Layout?, ...) at these indices are all
// None: the library can take the call.
bool hidden_none(Stack* stack, std::size_t n, std::initializer_list<std::size_t> hidden);

// Runs ATen's overload `name` ("add.out") on the stack as it is.
void call_aten(const char* name, Stack* stack);

// A differentiable call of a composite failed (its body writes through an
// out= overload, which autograd does not take): the error names the op.
[[noreturn]] void not_differentiable(const char* op, const std::exception& e);

}  // namespace infini::ops::torch_bridge::dispatcher

#endif  // INFINI_OPS_DISPATCHER_REGISTRATION_H_
