// Tensor-level UOp helpers: devices, buffers, params, copies (tinygrad's UOp buffer section in uop/ops.py and the UOp
// side of the creation/elementwise/dtype mixins).
#include <algorithm>
#include <atomic>

#include "tg/device.h"
#include "uop/args.h"
#include "uop/multi_arg.h"
#include "uop/movement.h"
#include "uop/nodemap.h"
#include "uop/uop.h"

namespace tg {

namespace {
UOp shape_arg(const Shape& s) {
  std::vector<UOp> src;
  for (auto x : s) src.push_back(UOp::const_(ConstVal(x)));
  return src.size() == 1 ? src[0] : UOp::stack(src);
}
void refuse_weak(const char* what, DType dt) {
  if (dt.is_weak()) throw Error(std::string(what) + ": cannot create storage for weak dtype " + std::string(dt.name()));
}
[[noreturn]] void multi_device(const char* what, Ops op) {
  throw Error(std::string(what) + ": multi-device " + std::string(op_name(op)) + " is not supported yet");
}
std::atomic<int64_t> unique_num{0};

// the device a defining node names itself: BUFFER/PARAM (ParamArg), STAGE (BufferizeOpts), COPY (its arg); nullopt
// inside means "defines, but on no device" (a Variable, a LOCAL STAGE)
std::optional<std::optional<std::string>> own_device(const UOpNode* n) {
  switch (n->op) {
    case Ops::PARAM: case Ops::BUFFER:
      if (!n->arg.is<std::shared_ptr<const ParamArg>>()) return std::nullopt;
      return n->arg.param().device.empty() ? std::optional<std::string>() : n->arg.param().device;
    case Ops::STAGE: {
      if (!n->arg.is<std::shared_ptr<const ArgObject>>()) return std::nullopt;
      auto* bo = dynamic_cast<const BufferizeOpts*>(std::get<std::shared_ptr<const ArgObject>>(n->arg.v).get());
      if (!bo) return std::nullopt;
      if (auto* d = std::get_if<std::string>(&bo->device)) return std::optional<std::string>(*d);
      if (std::holds_alternative<std::vector<std::string>>(bo->device)) multi_device("device", n->op);
      return std::optional<std::string>();
    }
    case Ops::COPY: return n->arg.is<std::string>() ? std::optional<std::string>(n->arg.s()) : std::optional<std::string>();
    case Ops::MSTACK:  // a multi-device value (schedule/multi.h): its arg holds the device tuple
      if (auto* ma = multi_arg(n->arg)) return std::optional<std::string>(ma->devices);
      multi_device("device", n->op);
    case Ops::MSELECT: case Ops::ALLREDUCE: multi_device("device", n->op);
    default: return std::nullopt;
  }
}
}  // namespace

// the first device found in source order; a pre-order walk with a visited set gives the recursive definition's answer
// (a visited node had no device, else the walk would have stopped) without its exponential worst case
std::optional<std::string> UOp::device() const {
  // fast path, no allocation: most nodes get their device down the chain of first sources
  for (const UOpNode* n = p;;) {
    if (auto d = own_device(n)) {
      if (*d) return *d;
      break;
    }
    if (n->nsrc == 0) break;
    n = n->srcs()[0].get();
  }
  // the full walk is cached on the node (realize asks every output for its device)
  p->props();
  auto& cached = p->cache->device;
  if (cached) return *cached;
  static thread_local std::vector<const UOpNode*> stack;  // reused: own_device never comes back here
  static thread_local NodeMap<bool> seen;
  struct Clear { ~Clear() { seen.clear(), stack.clear(); } } clear_after;  // holds no node past the walk
  stack.push_back(p);
  while (!stack.empty()) {
    const UOpNode* n = stack.back();
    stack.pop_back();
    if (!seen.try_emplace(UOp(n)).second) continue;
    // a node asked before: its answer is the first device of its subgraph, or none in the whole subgraph
    if (const auto* c = n->cache ? &n->cache->device : nullptr; c && *c) {
      if (**c) return *(cached = **c);
      continue;
    }
    if (auto d = own_device(n)) {
      if (*d) return *(cached = *d);
      continue;
    }
    if (n->op == Ops::AFTER) { stack.push_back(n->srcs()[0].get()); continue; }
    for (uint32_t i = n->nsrc; i-- > 0;) stack.push_back(n->srcs()[i].get());
  }
  return *(cached = std::optional<std::string>());
}

bool UOp::is_virtual() const { return dtype().is_weak() || !device(); }

std::optional<AddrSpace> UOp::addrspace() const {
  if (p->addrspace) return p->addrspace == 1 ? std::nullopt : std::optional(AddrSpace(p->addrspace - 1));
  std::optional<AddrSpace> r;
  switch (op()) {
    case Ops::PARAM: case Ops::BUFFER: if (arg().is<std::shared_ptr<const ParamArg>>()) r = arg().param().addrspace; break;
    case Ops::SPECIAL: case Ops::RANGE: case Ops::LOAD: r = AddrSpace::ALU; break;
    case Ops::INDEX: case Ops::CAST: case Ops::AFTER: case Ops::REDUCE: case Ops::STORE: case Ops::MSTACK: case Ops::MSELECT:
    case Ops::END: case Ops::UNSHARD: r = src(0).addrspace(); break;
    default:
      if (GroupOp::Movement.has(op())) r = src(0).addrspace();
      else if (op() == Ops::STACK || op() == Ops::WMMA || op() == Ops::GROUP || GroupOp::Elementwise.has(op())) {
        bool same = true;
        for (auto& s : src())
          if (auto a = s.addrspace()) { if (r && *r != *a) same = false; r = a; }
        if (!same) r.reset();
      }
  }
  p->addrspace = r ? uint8_t(uint8_t(*r) + 1) : 1;
  return r;
}

bool UOp::has_buffer_identity(bool after_ok) const {
  if (op() == Ops::RESHAPE || op() == Ops::UNSHARD || op() == Ops::MSELECT || (after_ok && op() == Ops::AFTER))
    return src(0).has_buffer_identity(after_ok);
  return op() == Ops::BUFFER || op() == Ops::PARAM;
}

UOp UOp::buf_uop() const {
  if (op() == Ops::BUFFER || op() == Ops::PARAM) return *this;
  if (op() == Ops::MSELECT || op() == Ops::MSTACK) multi_device("buf_uop", op());
  if (UOp b = base(); b.op() == Ops::AFTER) return b.src(0).buf_uop().base();
  UOp s = *this;
  while (!s.src().empty() && s.op() != Ops::BUFFER && s.op() != Ops::PARAM && s.op() != Ops::STAGE && s.op() != Ops::MSTACK) s = s.src(0);
  return s;
}

int64_t UOp::next_unique_num() { return unique_num.load(); }

UOp UOp::new_buffer(const std::string& device, int64_t size, DType dtype) {
  refuse_weak("new_buffer", dtype);
  ParamArg pa{unique_num++, dtype};
  pa.device = device;
  return make(Ops::BUFFER, dtype, {shape_arg({size})}, Arg(std::move(pa)));
}

UOp UOp::param(int64_t slot, DType dtype, std::optional<Shape> shape, std::optional<std::string> device, AddrSpace addrspace) {
  refuse_weak("param", dtype);
  ParamArg pa{slot, dtype};
  pa.addrspace = addrspace;
  pa.device = device.value_or("");
  return make(Ops::PARAM, dtype, {shape ? shape_arg(*shape) : make(Ops::NOOP, dtypes::void_)}, Arg(std::move(pa)));
}

UOp UOp::param_like(int64_t slot) const {
  if (is_bound_var() || is_variable()) {
    const UOp& b = op() == Ops::AFTER ? src(0) : *this;
    ParamArg pa = b.arg().param();
    pa.slot = slot;
    pa.name = "p" + std::to_string(slot);
    return make(Ops::PARAM, b.dtype(), b.src(), Arg(std::move(pa)));
  }
  return param(slot, dtype(), shape_opt(), device(), addrspace().value_or(AddrSpace::GLOBAL));
}

UOp UOp::gettuple(int64_t i) const { return make(Ops::GETTUPLE, {*this}, Arg(i)); }

UOp UOp::empty(const Shape& shape, DType dtype, const std::string& device) {
  int64_t n = 1;
  for (auto s : shape) {
    if (s < 0) throw Error("empty: negative dimension in shape " + shape_str(shape));
    n *= s;
  }
  return new_buffer(canonicalize_device(device), n, dtype).reshape(shape).shrink_to(shape);
}

UOp UOp::empty_sym(const SShape& shape, DType dtype, const std::string& device) {
  if (auto is = int_shape(shape)) return empty(*is, dtype, device);
  Shape mx;  // a buffer of the largest size, shrunk to the symbolic shape
  std::vector<std::pair<UOp, UOp>> se;
  for (auto& s : shape) {
    if (s.vmin() < ConstVal(int64_t(0))) throw Error("empty: dim " + s.render() + " of shape " + sym_shape_str(shape) + " can be negative");
    mx.push_back(s.vmax().i), se.push_back({const_(int64_t(0)), s});
  }
  return empty(mx, dtype, device).shrink_sym(se);
}

UOp UOp::empty_like(std::optional<DType> dt, std::optional<std::string> dev) const {
  std::string d = canonicalize_device(dev ? *dev : device().value_or(""));
  if (has_sym_shape()) return empty_sym(sym_shape(), dt ? *dt : strong_dtype(dtype()), d);
  return empty(shape(), dt ? *dt : strong_dtype(dtype()), d);
}

UOp UOp::contiguous() const {
  if (dtype().is_weak() || op() == Ops::CONTIGUOUS || !device() || has_buffer_identity()) return *this;
  return alu(Ops::CONTIGUOUS);
}

UOp UOp::rop(Ops rop, std::vector<int64_t> axes) const {
  const SShape& sh = sym_shape();
  std::sort(axes.begin(), axes.end());
  std::vector<int64_t> red;
  auto is1 = [](const UOp& d) { return d.op() == Ops::CONST && d.val().is_int() && d.val().i == 1; };
  for (auto a : axes) if (!is1(sh.at(size_t(a)))) red.push_back(a);
  SShape kept;
  for (size_t i = 0; i < sh.size(); i++) if (std::find(axes.begin(), axes.end(), int64_t(i)) == axes.end()) kept.push_back(sh[i]);
  if (red.empty()) return reshape_sym(kept);
  std::vector<int64_t> perm = red;
  for (size_t i = 0; i < sh.size(); i++) if (std::find(red.begin(), red.end(), int64_t(i)) == red.end()) perm.push_back(int64_t(i));
  UOp ret = make(Ops::REDUCE, dtype(), {permute(perm)}, Arg(Arg::Ints{int64_t(rop), int64_t(red.size())}));
  return axes != red ? ret.reshape_sym(kept) : ret;
}

UOp UOp::copy_to_device(const std::string& dev) const {
  refuse_weak("copy_to_device", dtype());
  const Shape& sh = shape();
  return make(Ops::COPY, dtype(), {pad_to(sh)}, Arg(dev)).shrink_to(sh);
}

UOp UOp::bind(int64_t val) const {
  if (!is_variable()) throw Error("bind: " + std::string(op_name(op())) + " is not a Variable");
  const ParamArg& pa = arg().param();
  if (ConstVal(val) < pa.vmin_vmax->first || pa.vmin_vmax->second < ConstVal(val))
    throw Error("bind: " + std::to_string(val) + " is not in the range [" + pa.vmin_vmax->first.str() + ", " + pa.vmin_vmax->second.str() +
                "] of Variable '" + pa.name.value_or("?") + "'");
  return after({store(const_(val, dtype()))});
}

std::pair<UOp, int64_t> UOp::unbind() const {
  if (!is_bound_var()) throw Error("unbind: " + std::string(op_name(op())) + " is not a bound Variable");
  return {src(0), src(1).src(1).val().i};
}

std::unordered_map<UOp, int64_t> UOp::unbind_all(UOp* unbound) const {
  std::unordered_map<UOp, int64_t> vals;
  std::unordered_map<UOp, UOp> sub;
  for (auto& x : toposort())
    if (x.is_bound_var()) {
      auto [v, i] = x.unbind();
      if (auto it = vals.find(v); it != vals.end() && it->second != i)
        throw Error("unbind: Variable '" + v.arg().param().name.value_or("?") + "' is bound to " + std::to_string(it->second) + " and " + std::to_string(i));
      vals[v] = i, sub[x] = v;
    }
  if (unbound) *unbound = sub.empty() ? *this : substitute(sub);
  return vals;
}

bool UOp::is_variable() const {
  if (op() != Ops::BUFFER || !arg().is<std::shared_ptr<const ParamArg>>()) return false;
  const ParamArg& pa = arg().param();
  return pa.vmin_vmax && pa.addrspace == AddrSpace::ALU && shape_opt() && shape_opt()->empty();
}

bool UOp::is_bound_var() const {
  return op() == Ops::AFTER && src().size() == 2 && src(0).is_variable() && src(1).op() == Ops::STORE && src(1).src(0) == src(0) &&
         src(1).src(1).op() == Ops::CONST;
}

int64_t UOp::element_size() const {
  if (dtype().is_weak()) throw Error("element_size requires a concrete dtype, got " + std::string(dtype().name()));
  return dtype().itemsize();
}

int64_t UOp::max_numel() const {
  int64_t n = 1;
  for (auto s : shape()) n *= s;
  return n;
}

}  // namespace tg
