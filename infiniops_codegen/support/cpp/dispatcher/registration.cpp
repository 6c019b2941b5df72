// The library's ops as PyTorch operators: the kernels every op shares
// (dispatcher/registration.h).
#include "dispatcher/registration.h"

#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/op_registration/op_registration.h>
#include <c10/core/GradMode.h>
#include <torch/library.h>
#include <c10/core/SymInt.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

namespace infini::ops::torch_bridge::dispatcher {

namespace {

bool requires_grad(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() && v.toTensor().requires_grad();
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) {
      if (t.defined() && t.requires_grad()) return true;
    }
    return false;
  }
  if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) {
      if (requires_grad(e)) return true;
    }
  }
  return false;
}

bool any_requires_grad(const Stack& stack, std::size_t n) {
  for (std::size_t i = stack.size() - n; i < stack.size(); ++i) {
    if (requires_grad(stack[i])) return true;
  }
  return false;
}

const c10::OperatorHandle& aten_op(const char* name) {
  std::string_view full(name);
  const auto dot = full.find('.');
  const std::string base = "aten::" + std::string(full.substr(0, dot));
  const std::string overload = dot == std::string_view::npos ? "" : std::string(full.substr(dot + 1));
  // Looked up on each call that needs it: these calls are the slow ones
  // (autograd, arguments the library cannot take).
  static thread_local std::unordered_map<std::string, c10::OperatorHandle> cache;
  auto it = cache.find(full.data());
  if (it == cache.end()) {
    it = cache.emplace(std::string(full), c10::Dispatcher::singleton().findSchemaOrThrow(
                                              base.c_str(), overload.c_str()))
             .first;
  }
  return it->second;
}

// A kernel of the library's own, as the dispatcher calls it.
class OwnKernel final : public c10::OperatorKernel {
 public:
  explicit OwnKernel(Kernel kernel) : kernel_(kernel) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, Stack* stack) {
    kernel_(stack);
  }

 private:
  Kernel kernel_;
};

// The functional overload where the library's own call without out= is
// ATen's functional overload: that overload, run on the same stack (the two
// schemas are the same).
class AtenTwin final : public c10::OperatorKernel {
 public:
  explicit AtenTwin(const char* name) : name_(name) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, Stack* stack) {
    call_aten(name_, stack);
  }

 private:
  const char* name_;
};

// Autograd of the functional overload: with an input that requires grad,
// ATen's twin (its derivative is torch's) or the composite's body on ATen
// values; otherwise the library's kernel below autograd.
class FunctionalAutograd final : public c10::OperatorKernel {
 public:
  FunctionalAutograd(const char* twin, Kernel differentiable)
      : twin_(twin), differentiable_(differentiable) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, Stack* stack) {
    const std::size_t n = op.schema().arguments().size();
    if (c10::GradMode::is_enabled() && any_requires_grad(*stack, n)) {
      if (twin_ != nullptr) return call_aten(twin_, stack);
      return differentiable_(stack);
    }
    at::AutoDispatchBelowADInplaceOrView below;
    op.redispatchBoxed(keys & c10::after_ADInplaceOrView_keyset, stack);
  }

 private:
  const char* twin_;
  Kernel differentiable_;
};

// Autograd of the out= overload: as ATen's out= overloads, none (an error
// when an argument requires grad); otherwise the kernel, whose ATen calls
// bump the outputs' version counters as torch's own call does.
class OutAutograd final : public c10::OperatorKernel {
 public:
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, Stack* stack) {
    const std::size_t n = op.schema().arguments().size();
    TORCH_CHECK(!(c10::GradMode::is_enabled() && any_requires_grad(*stack, n)),
                op.schema().name(), "(): functions with out=... arguments don't support ",
                "automatic differentiation, but one of the arguments requires grad.");
    op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
  }
};

bool is_functional(const c10::IValue& v) {
  if (v.isTensor()) return at::functionalization::impl::isFunctionalTensor(v.toTensor());
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) {
      if (at::functionalization::impl::isFunctionalTensor(t)) return true;
    }
  }
  if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) {
      if (is_functional(e)) return true;
    }
  }
  return false;
}

c10::IValue unwrap_functional(const c10::IValue& v) {
  namespace fi = at::functionalization::impl;
  auto one = [](const at::Tensor& t) {
    if (!t.defined() || !fi::isFunctionalTensor(t)) return t;
    fi::sync(t);
    return fi::from_functional_tensor(t);
  };
  if (v.isTensor()) return one(v.toTensor());
  if (v.isTensorList()) {
    std::vector<at::Tensor> ts;
    for (const at::Tensor& t : v.toTensorList()) ts.push_back(one(t));
    return ts;
  }
  if (v.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> ts;
    for (std::optional<at::Tensor> t : v.toOptionalTensorList()) {
      ts.push_back(t ? std::optional<at::Tensor>(one(*t)) : std::nullopt);
    }
    return ts;
  }
  return v;
}

// Functionalization of the out= overload, as ATen's own out= overloads are
// functionalized: the functional overload on the unwrapped inputs, its
// results then become the outputs' new values (replace_, which also takes
// their shape: the resize an out= call makes).
class OutFunctionalize final : public c10::OperatorKernel {
 public:
  OutFunctionalize(std::string ns, const char* functional) {
    std::string_view full(functional);
    const auto dot = full.find('.');
    base_ = ns + "::" + std::string(full.substr(0, dot));
    overload_ = dot == std::string_view::npos ? "" : std::string(full.substr(dot + 1));
  }
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys, Stack* stack) {
    namespace fi = at::functionalization::impl;
    const auto& args = op.schema().arguments();
    const std::size_t n = args.size();
    const std::size_t base = stack->size() - n;
    std::vector<std::size_t> outs;
    bool outs_functional = true;
    bool inputs_functional = false;
    for (std::size_t i = 0; i < n; ++i) {
      const bool written = args[i].alias_info() && args[i].alias_info()->isWrite();
      if (written) {
        outs.push_back(i);
        outs_functional = outs_functional && is_functional((*stack)[base + i]);
      } else {
        inputs_functional = inputs_functional || is_functional((*stack)[base + i]);
      }
    }
    if (!outs_functional) {
      TORCH_CHECK(!inputs_functional, op.schema().name(),
                  ": mutating a non-functional tensor with a functional tensor is not allowed. "
                  "Please ensure that all of your inputs are wrapped inside of a functionalize() call.");
      at::AutoDispatchSkipFunctionalize skip;
      op.redispatchBoxed(keys.remove(c10::DispatchKey::Functionalize), stack);
      return;
    }
    // The functional overload's arguments by name: the out= call's inputs,
    // and a factory's dtype, layout and device taken from its first output,
    // as ATen's functionalization of zeros.out calls zeros.
    Stack inner;
    auto like = [&] {
      const c10::IValue& o = (*stack)[base + outs.front()];
      return unwrap_functional(o.isTensor() ? o : o.toListRef()[0]).toTensor();
    };
    for (const auto& a : functional().schema().arguments()) {
      const auto i = op.schema().argumentIndexWithName(a.name());
      if (i) {
        inner.push_back(unwrap_functional((*stack)[base + *i]));
      } else if (a.name() == "dtype") {
        inner.push_back(like().scalar_type());
      } else if (a.name() == "layout") {
        inner.push_back(like().layout());
      } else if (a.name() == "device") {
        inner.push_back(like().device());
      } else {
        inner.push_back(c10::IValue());  // pin_memory
      }
    }
    {
      at::AutoDispatchSkipFunctionalize skip;
      functional().callBoxed(&inner);
    }
    TORCH_INTERNAL_ASSERT(inner.size() == outs.size());
    std::vector<c10::IValue> returned;
    auto take = [](const at::Tensor& out, const at::Tensor& value) {
      fi::replace_(out, value);
      fi::commit_update(out);
      fi::sync(out);
    };
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const c10::IValue& out = (*stack)[base + outs[k]];
      if (out.isTensor()) {
        take(out.toTensor(), inner[k].toTensor());
      } else {  // a Tensor[] out: element by element
        const auto values = inner[k].toTensorVector();
        const auto written = out.toTensorVector();
        TORCH_CHECK(values.size() == written.size(), op.schema().name(), ": ", written.size(),
                    " outputs for ", values.size(), " results");
        for (std::size_t e = 0; e < written.size(); ++e) take(written[e], values[e]);
      }
      returned.push_back(out);
    }
    torch::jit::drop(*stack, n);
    if (!op.schema().returns().empty()) {
      for (auto& r : returned) torch::jit::push(*stack, std::move(r));
    }
  }

 private:
  const c10::OperatorHandle& functional() {
    if (!handle_) {
      handle_ = c10::Dispatcher::singleton().findSchemaOrThrow(base_.c_str(), overload_.c_str());
    }
    return *handle_;
  }

  std::string base_;
  std::string overload_;
  std::optional<c10::OperatorHandle> handle_;
};

// The out= overload's functionalization is its functional overload's call
// where what it writes are its outputs (Tensor or Tensor[]), one per
// functional result (not an input written in place).
bool functionalizable(const c10::FunctionSchema& out, const c10::FunctionSchema& functional) {
  std::size_t written = 0;
  std::vector<std::string> inputs;
  for (const auto& a : out.arguments()) {
    if (!a.alias_info() || !a.alias_info()->isWrite()) {
      inputs.push_back(a.name());
      continue;
    }
    const bool tensor = a.type()->kind() == c10::TypeKind::TensorType;
    const bool tensors = a.type()->kind() == c10::TypeKind::ListType &&
                         a.type()->containedType(0)->kind() == c10::TypeKind::TensorType;
    if (!(tensor || tensors) || !a.kwarg_only()) return false;
    ++written;
  }
  // The functional overload takes exactly the other arguments, and a
  // factory's options besides them (filled in from the output).
  std::size_t k = 0;
  for (const auto& a : functional.arguments()) {
    if (k < inputs.size() && a.name() == inputs[k]) {
      ++k;
    } else if (a.name() != "dtype" && a.name() != "layout" && a.name() != "device" &&
               a.name() != "pin_memory") {
      return false;
    } else if (written == 0) {
      return false;  // no output to take the options from
    }
  }
  return k == inputs.size() && written == functional.returns().size();
}

// Where it is not: an error naming the op, rather than torch's generic
// functionalization of mutable ops (which crashed on a Tensor[] out).
class NotFunctionalizable final : public c10::OperatorKernel {
 public:
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack*) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, op.schema().name(), ".", op.schema().overload_name(),
                                ": not functionalizable (it writes an input in place, or its "
                                "functional overload takes other arguments), so torch.compile "
                                "and torch.export cannot take it; its functional overload can be "
                                "traced");
  }
};

// Whether a schema type holds tensors (Tensor, Tensor?, Tensor[], Tensor?[]).
bool holds_tensors(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  for (const auto& contained : type->containedTypes()) {
    if (holds_tensors(contained)) return true;
  }
  return false;
}

// The backend of a call with no tensor argument (a factory: zeros, randn,
// arange...), as ATen's BackendSelect kernels pick it: from its dtype, layout
// and device arguments (the CPU where they are None). Without it the
// dispatcher has no key to run such an op's kernel by.
class SelectBackend final : public c10::OperatorKernel {
 public:
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
    const auto& args = op.schema().arguments();
    const std::size_t base = stack->size() - args.size();
    std::optional<at::ScalarType> dtype;
    std::optional<at::Layout> layout;
    std::optional<at::Device> device;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const c10::IValue& v = (*stack)[base + i];
      if (v.isNone()) continue;
      if (args[i].name() == "dtype") dtype = v.toScalarType();
      if (args[i].name() == "layout") layout = v.toLayout();
      if (args[i].name() == "device") device = v.toDevice();
    }
    op.redispatchBoxed(c10::DispatchKeySet(c10::computeDispatchKey(dtype, layout, device)),
                       stack);
  }
};

}  // namespace

Tensor Args::tensor(std::size_t i) const { return from_aten((*this)[i].toTensor()); }
std::optional<Tensor> Args::tensor_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return tensor(i);
}
Scalar Args::scalar(std::size_t i) const { return to_core((*this)[i].toScalar()); }
std::optional<Scalar> Args::scalar_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return scalar(i);
}
int64_t Args::integer(std::size_t i) const { return to_int((*this)[i]); }
std::optional<int64_t> Args::integer_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return integer(i);
}
std::optional<std::vector<int64_t>> Args::int_list_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return int_list(i);
}
double Args::real(std::size_t i) const { return (*this)[i].toDouble(); }
std::optional<double> Args::real_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return real(i);
}
std::optional<std::vector<double>> Args::real_list_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return (*this)[i].toDoubleVector();
}
bool Args::boolean(std::size_t i) const { return (*this)[i].toBool(); }
std::optional<bool> Args::boolean_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return boolean(i);
}
std::string_view Args::str(std::size_t i) const { return (*this)[i].toStringView(); }
std::optional<std::string_view> Args::str_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return str(i);
}
DataType Args::dtype(std::size_t i) const { return from_aten((*this)[i].toScalarType()); }
std::optional<DataType> Args::dtype_opt(std::size_t i) const {
  if (none(i)) return std::nullopt;
  return dtype(i);
}
TensorRef Args::ref(std::size_t i) const {
  return TensorRef{(*this)[i].toTensor().unsafeGetTensorImpl()};
}
OptionalTensorRef Args::opt_ref(std::size_t i) const {
  return OptionalTensorRef{none(i) ? nullptr : (*this)[i].toTensor().unsafeGetTensorImpl()};
}

Tensor result(const Results& r, int k) {
  return from_aten(at::Tensor(c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::reclaim_copy(
      static_cast<c10::TensorImpl*>(r.impls[k]))));
}

std::vector<Tensor> Args::tensor_list(std::size_t i) const {
  std::vector<Tensor> ts;
  for (const at::Tensor& t : (*this)[i].toTensorList()) ts.push_back(from_aten(t));
  return ts;
}

std::vector<std::optional<Tensor>> Args::tensor_opt_list(std::size_t i) const {
  std::vector<std::optional<Tensor>> ts;
  for (const c10::IValue& e : (*this)[i].toListRef()) {
    if (e.isNone()) {
      ts.emplace_back(std::nullopt);
    } else {
      ts.emplace_back(from_aten(e.toTensor()));
    }
  }
  return ts;
}

std::vector<Scalar> Args::scalar_list(std::size_t i) const {
  std::vector<Scalar> ss;
  for (const c10::IValue& e : (*this)[i].toListRef()) ss.push_back(to_core(e.toScalar()));
  return ss;
}

std::vector<int64_t> Args::int_list(std::size_t i) const {
  const c10::IValue& v = (*this)[i];
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> values;
  for (const c10::IValue& e : v.toListRef()) values.push_back(to_int(e));
  return values;
}

Scalar Args::to_core(const at::Scalar& s) {
  if (s.isBoolean()) return Scalar(s.toBool());
  if (s.isIntegral(false)) return Scalar(s.toLong());
  if (s.isComplex()) return Scalar(static_cast<std::complex<double>>(s.toComplexDouble()));
  return Scalar(s.toDouble());
}

int64_t Args::to_int(const c10::IValue& v) {
  if (v.isSymInt()) return v.toSymInt().guard_int(__FILE__, __LINE__);
  return v.toInt();
}

void Args::finish(std::initializer_list<std::size_t> outputs) {
  std::vector<c10::IValue> returned;
  returned.reserve(outputs.size());
  for (std::size_t i : outputs) returned.push_back((*this)[i]);
  torch::jit::drop(stack_, n_);
  for (auto& r : returned) torch::jit::push(stack_, std::move(r));
}

void Args::finish(Results& results) {
  torch::jit::drop(stack_, n_);
  for (int k = 0; k < results.count; ++k) {
    auto* impl = static_cast<c10::TensorImpl*>(results.impls[k]);
    results.impls[k] = nullptr;
    torch::jit::push(stack_, at::Tensor(c10::intrusive_ptr<c10::TensorImpl,
                                                           c10::UndefinedTensorImpl>::reclaim(impl)));
  }
  results.count = 0;
}

bool hidden_none(Stack* stack, std::size_t n, std::initializer_list<std::size_t> hidden) {
  const std::size_t base = stack->size() - n;
  for (std::size_t i : hidden) {
    if (!(*stack)[base + i].isNone()) return false;
  }
  return true;
}

void call_aten(const char* name, Stack* stack) { aten_op(name).callBoxed(stack); }

void not_differentiable(const char* op, const std::exception& e) {
  TORCH_CHECK(false, op,
              ": no derivative: its composite body does not differentiate (it writes "
              "through an out= overload, which autograd does not take): ",
              e.what());
}

void register_ops(const char* ns, std::span<const OpEntry> ops,
                  std::span<const char* const> devices) {
  static std::once_flag once;
  std::call_once(once, [&] {
    // Never destroyed: the registrations last until the process exits
    // (undoing them in static destruction would race torch's own).
    auto* defs = new torch::Library(torch::Library::DEF, ns, std::nullopt, __FILE__, __LINE__);
    for (const OpEntry& op : ops) {
      // Lvalues: a temporary vector would pick def()'s (schema, kernel) form.
      const std::vector<at::Tag> out_tags(op.out_tags);
      defs->def(op.out_schema, out_tags);
      if (op.functional_schema != nullptr) {
        const std::vector<at::Tag> functional_tags(op.functional_tags);
        defs->def(op.functional_schema, functional_tags);
      }
    }
    std::vector<c10::DispatchKey> keys;
    for (const char* device : devices) {
      const auto key = c10::computeDispatchKey(std::nullopt, c10::kStrided,
                                               c10::Device(std::string(device)));
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
    for (c10::DispatchKey key : keys) {
      auto* impls = new torch::Library(torch::Library::IMPL, ns, key, __FILE__, __LINE__);
      for (const OpEntry& op : ops) {
        impls->impl(op.out_name,
                    torch::CppFunction::makeFromBoxedFunctor(std::make_unique<OwnKernel>(op.out_kernel)));
        if (op.functional_schema == nullptr) continue;
        if (op.functional_kernel != nullptr) {
          impls->impl(op.functional_name, torch::CppFunction::makeFromBoxedFunctor(
                                              std::make_unique<OwnKernel>(op.functional_kernel)));
        } else {
          impls->impl(op.functional_name, torch::CppFunction::makeFromBoxedFunctor(
                                              std::make_unique<AtenTwin>(op.aten_functional)));
        }
      }
    }
    auto* autograd =
        new torch::Library(torch::Library::IMPL, ns, c10::DispatchKey::Autograd, __FILE__, __LINE__);
    auto* functionalize = new torch::Library(torch::Library::IMPL, ns,
                                             c10::DispatchKey::Functionalize, __FILE__, __LINE__);
    auto* backend_select = new torch::Library(torch::Library::IMPL, ns,
                                              c10::DispatchKey::BackendSelect, __FILE__, __LINE__);
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const OpEntry& op : ops) {
      autograd->impl(op.out_name,
                     torch::CppFunction::makeFromBoxedFunctor(std::make_unique<OutAutograd>()));
      if (op.functional_schema == nullptr) continue;
      autograd->impl(op.functional_name,
                     torch::CppFunction::makeFromBoxedFunctor(std::make_unique<FunctionalAutograd>(
                         op.aten_functional, op.differentiable)));
      std::string_view out(op.out_name);
      const auto dot = out.find('.');
      const auto handle = dispatcher.findSchemaOrThrow(
          (std::string(ns) + "::" + std::string(out.substr(0, dot))).c_str(),
          dot == std::string_view::npos ? "" : std::string(out.substr(dot + 1)).c_str());
      std::string_view f(op.functional_name);
      const auto fdot = f.find('.');
      const auto functional = dispatcher.findSchemaOrThrow(
          (std::string(ns) + "::" + std::string(f.substr(0, fdot))).c_str(),
          fdot == std::string_view::npos ? "" : std::string(f.substr(fdot + 1)).c_str());
      const auto& functional_args = functional.schema().arguments();
      if (std::none_of(functional_args.begin(), functional_args.end(),
                       [](const c10::Argument& a) { return holds_tensors(a.type()); })) {
        backend_select->impl(op.functional_name, torch::CppFunction::makeFromBoxedFunctor(
                                                     std::make_unique<SelectBackend>()));
      }
      if (functionalizable(handle.schema(), functional.schema())) {
        functionalize->impl(op.out_name, torch::CppFunction::makeFromBoxedFunctor(
                                             std::make_unique<OutFunctionalize>(ns, op.functional_name)));
      } else {
        functionalize->impl(op.out_name, torch::CppFunction::makeFromBoxedFunctor(
                                             std::make_unique<NotFunctionalizable>()));
      }
    }
  });
}

}  // namespace infini::ops::torch_bridge::dispatcher
