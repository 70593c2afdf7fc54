#pragma once
// The arg objects of later layers, printed exactly as tinygrad's repr: KernelInfo (a kernel AST's SINK), BufferizeOpts
// (the scheduler's STAGE/bufferize), CallInfo (a CALL), with the Opt and Estimates values KernelInfo carries.
//
//   UOp sink = UOp::make(Ops::SINK, dtypes::void_, {store}, make_arg(KernelInfo{.name = "E_4"}));
//   if (const KernelInfo* ki = kernel_info(sink)) ki->function_name();
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "uop/uop.h"

namespace tg {

enum class OptOps : uint8_t { TC = 1, UPCAST, UNROLL, LOCAL, THREAD, GROUP, GROUPTOP, NOLOCALS, PADTO, SWAP };
std::string_view opt_ops_name(OptOps o);  // "UPCAST"

// one optimization: op on axis with arg (None, an int, or a tuple of ints for TC)
struct Opt {
  OptOps op = OptOps::UPCAST;
  std::optional<int64_t> axis;
  Arg arg;
  bool operator==(const Opt& o) const { return op == o.op && axis == o.axis && arg == o.arg; }
  std::string str() const;  // Opt(op=OptOps.UPCAST, axis=0, arg=4)
};

// tinygrad's renderer Estimates (symbolic counts are not kept: ints only)
struct Estimates {
  int64_t ops = 0, lds = 0, mem = 0;
  bool operator==(const Estimates& o) const = default;
  std::string str() const;  // Estimates(ops=8, lds=64, mem=64)
};

struct KernelInfo : ArgObject {
  std::string name = "test";
  std::vector<AxisType> axis_types;
  bool dont_use_locals = false;
  std::vector<Opt> applied_opts;
  std::optional<std::vector<Opt>> opts_to_apply;
  std::optional<Estimates> estimates;
  int64_t beam = 0;
  std::string function_name() const;  // name as a C identifier (tinygrad's to_function_name)
  size_t hash() const override;
  bool equals(const ArgObject& o) const override;
  std::string str() const override;
};

struct BufferizeOpts : ArgObject {
  // a device name, several (multi-device), an int (on AddrSpace.LOCAL: the id), or None
  std::variant<std::monostate, std::string, std::vector<std::string>, int64_t> device;
  AddrSpace addrspace = AddrSpace::GLOBAL;
  bool removable = true;
  size_t hash() const override;
  bool equals(const ArgObject& o) const override;
  std::string str() const override;
};

// a WMMA's arg (tinygrad's (dims, dtype_in, device, threads, tc_upcast_axes)): the tensor core's (N, M, K), the dtype of
// A and B, the device, the threads of the warp, and for A, B and C the (range id, size) axes each thread's lanes run over
// (the expander contracts A and B over theirs and unrolls C over its own; it drops them then)
struct WmmaArg : ArgObject {
  using Axes = std::vector<std::pair<int64_t, int64_t>>;
  std::array<int64_t, 3> dims{};
  DType dtype_in;
  std::string device;
  int64_t threads = 0;
  std::optional<std::array<Axes, 3>> upcast_axes;
  size_t hash() const override;
  bool equals(const ArgObject& o) const override;
  std::string str() const override;
};

// tinygrad prints the gradient function as its id() (None when there is none); aux is not printed and not kept
// a FUNCTION's own gradient rule: the gradients of its outputs (an empty UOp for an output that has none) and the
// FUNCTION itself -> one gradient per argument (an empty UOp where an argument gets none)
using CallGradFxn = std::function<std::vector<UOp>(const std::vector<UOp>& grads, const UOp& call)>;
struct CallInfo : ArgObject {
  std::optional<int64_t> grad_fxn;  // printed id; set from grad_fn where there is one
  std::shared_ptr<const CallGradFxn> grad_fn;
  std::optional<std::string> name;
  bool precompile = false, precompile_backward = false;
  size_t hash() const override;
  bool equals(const ArgObject& o) const override;
  std::string str() const override;
};

// tinygrad's UOp.call for a value-producing body: FUNCTION(TUPLE(outputs), args...), a TUPLE body kept as it is; the
// body's PARAMs are checked against the arguments they stand for (slot, shape, dtype)
UOp make_function(const UOp& body, const std::vector<UOp>& args, CallInfo info = {});
// a function body's PARAMs by slot, the first of each (not those of FUNCTIONs nested in it)
std::map<int64_t, UOp> function_params(const UOp& body);

template <class T> Arg make_arg(T v) { return Arg(std::shared_ptr<const ArgObject>(std::make_shared<const T>(std::move(v)))); }
// the arg of u as T, or nullptr when it is something else
template <class T> const T* arg_as(const UOp& u) {
  auto* o = std::get_if<std::shared_ptr<const ArgObject>>(&u.arg().v);
  return o ? dynamic_cast<const T*>(o->get()) : nullptr;
}
inline const KernelInfo* kernel_info(const UOp& u) { return arg_as<KernelInfo>(u); }
inline const BufferizeOpts* bufferize_opts(const UOp& u) { return arg_as<BufferizeOpts>(u); }
inline const CallInfo* call_info(const UOp& u) { return arg_as<CallInfo>(u); }
inline const WmmaArg* wmma_arg(const UOp& u) { return arg_as<WmmaArg>(u); }

std::string py_repr(const std::string& s);  // Python's repr of a str: 'abc', "it's"
std::string_view addrspace_name(AddrSpace a);  // "GLOBAL"

}  // namespace tg
