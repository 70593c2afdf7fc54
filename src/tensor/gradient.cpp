// Autograd (tinygrad's mixin/gradient.py and the backward/gradient entry points of tensor.py). One rule per op maps the
// gradient flowing into a node (the matcher's ctx) to the gradients of its sources, returned as a TUPLE with a NOOP
// where a source gets none; compute_gradient walks the graph back from the root. Gradients are lazy UOp graphs like any
// other: nothing runs until they are realized.
#include "tensor/gradient.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <numeric>

#include "schedule/multi.h"
#include "tensor/tensor_impl.h"
#include "uop/args.h"
#include "uop/movement.h"
#include "uop/upat.h"

namespace tg {

// ***** 1. the rules *****

namespace {
using Grads = std::vector<UOp>;  // an empty UOp: this source gets no gradient

UOp tuple(const Grads& g) {
  std::vector<UOp> s;
  for (auto& x : g) s.push_back(x ? x : UOp::make(Ops::NOOP, dtypes::void_));
  return UOp::make(Ops::TUPLE, dtypes::void_, s);
}
const UOp& G(M m) { return m.ctx<UOp>(); }
UOp c(double v) { return UOp::const_(ConstVal(v)); }
UOp ci(int64_t v) { return UOp::const_(ConstVal(v)); }
std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

UOp reduce_gradient(const UOp& ctx, const UOp& ret) {
  auto op = Ops(ret.arg().ints()[0]);
  std::vector<int64_t> axes = iota(ret.arg().ints()[1]);
  const UOp& x = ret.src(0);
  if (op == Ops::ADD) return tuple({x.has_sym_shape() ? ctx.expand_sym(x.sym_shape()) : ctx.expand(x.shape())});
  if (op == Ops::MAX) {
    // the gradient is split equally between ties
    UOp mask = x.eq(ret).cast(ctx.dtype());
    return tuple({mask / mask.rop(Ops::ADD, axes) * ctx});
  }
  if (op == Ops::MUL) {
    // d(prod x)/dx_j = prod of the others: ret/x_j when x_j != 0, else (with exactly one zero) the product of the rest
    UOp is_zero = x.eq(ci(0)), safe_x = is_zero.where(ci(1), x);
    UOp zero_count = is_zero.cast(sum_acc_dtype(is_zero.dtype())).rop(Ops::ADD, axes);
    return tuple({ctx * is_zero.where(zero_count.eq(ci(1)).where(safe_x.rop(Ops::MUL, axes), ci(0)), ret / safe_x)});
  }
  throw Error("gradient: no gradient for a REDUCE of " + std::string(op_name(op)));
}

// a buffer after a custom kernel: its gradient goes to the kernel, in the buffer's place among the CALL's arguments
UOp after_call_gradient(M m) {
  const UOp& k = m["k"];
  Grads per(k.src().size() - 1);
  per[size_t(std::find(k.src().begin() + 1, k.src().end(), m["d"]) - k.src().begin() - 1)] = G(m);
  return tuple({G(m), tuple(per)});
}

const PatternMatcher& pm_gradient() {
  static const PatternMatcher pm{
      UPat(Ops::CAST) >> [](M m) { return tuple({G(m).cast(m.root().src(0).dtype())}); },
      UPat(Ops::RECIPROCAL) >> [](M m) { return tuple({-G(m) * m.root() * m.root()}); },
      UPat(Ops::SIN) >> [](M m) { return tuple({(c(std::numbers::pi / 2) - m.root().src(0)).sin() * G(m)}); },
      UPat(Ops::LOG2) >> [](M m) { return tuple({G(m) / (m.root().src(0) * std::numbers::ln2)}); },
      UPat(Ops::EXP2) >> [](M m) { return tuple({m.root() * G(m) * std::numbers::ln2}); },
      UPat(Ops::SQRT) >> [](M m) { return tuple({G(m) / (m.root() * 2)}); },
      UPat(Ops::TRUNC) >> [](M m) { return tuple({G(m).const_like_shaped(ConstVal(0.0))}); },
      UPat(OpSet{Ops::CMPLT, Ops::CMPNE}) >> [](M) { return tuple({UOp(), UOp()}); },
      UPat(Ops::ADD) >> [](M m) { return tuple({G(m), G(m)}); },
      UPat(Ops::POW, {}, {UPat::var("b"), UPat::var("e")}) >> [](M m) {
        UOp b = m["b"], e = m["e"], ret = m.root();
        return tuple({G(m) * e.eq(ci(0)).where(e, e * b.pow(e - 1)),
                      G(m) * b.eq(ci(0)).where((e < 0).where(ret.const_like_shaped(ConstVal(-INFINITY)), ci(0)), ret * b.log2() * std::numbers::ln2)});
      },
      UPat(Ops::MAX, {}, {UPat::var("x"), UPat::var("y")}) >> [](M m) {
        UOp x = m["x"], y = m["y"];
        return tuple({(x > y).where(G(m), x.eq(y).where(G(m) * 0.5, ci(0))), (x < y).where(G(m), x.eq(y).where(G(m) * 0.5, ci(0)))});
      },
      UPat(Ops::MUL) >> [](M m) { return tuple({m.root().src(1) * G(m), m.root().src(0) * G(m)}); },
      UPat(Ops::WHERE) >> [](M m) {
        const UOp& cond = m.root().src(0);
        return tuple({UOp(), cond.where(G(m), G(m).const_like_shaped(ConstVal(0.0))), cond.where(G(m).const_like_shaped(ConstVal(0.0)), G(m))});
      },
      UPat(Ops::REDUCE) >> [](M m) { return reduce_gradient(G(m), m.root()); },
      UPat(Ops::CONTIGUOUS) >> [](M m) { return tuple({G(m)}); },
      UPat(Ops::CONTIGUOUS_BACKWARD) >> [](M m) { return tuple({G(m).contiguous()}); },
      UPat(Ops::RESHAPE) >> [](M m) {
        const UOp& src = m.root().src(0);
        return tuple({src.has_sym_shape() || G(m).has_sym_shape() ? G(m).reshape_sym(src.sym_shape()) : G(m).reshape(src.shape()), UOp()});
      },
      UPat(Ops::EXPAND) >> [](M m) { return tuple({G(m), UOp()}); },
      UPat(Ops::PAD) >> [](M m) {
        if (is_symbolic_mop(m.root())) {  // the same shrink with sint bounds
          SShape lo = as_sym_shape(m.root().src(1)), s = m.root().src(0).sym_shape();
          std::vector<std::pair<UOp, UOp>> arg;
          for (size_t i = 0; i < s.size(); i++) arg.push_back({lo[i], s[i] + lo[i]});
          return tuple({G(m).shrink_sym(arg), UOp(), UOp()});
        }
        std::vector<std::pair<int64_t, int64_t>> arg;
        auto mp = m.root().marg_pairs();
        const Shape& s = m.root().src(0).shape();
        for (size_t i = 0; i < s.size(); i++) arg.push_back({mp[i].first, s[i] + mp[i].first});
        return tuple({G(m).shrink(arg), UOp(), UOp()});
      },
      UPat(Ops::SHRINK) >> [](M m) {
        if (is_symbolic_mop(m.root())) {
          SShape lo = as_sym_shape(m.root().src(1)), sz = as_sym_shape(m.root().src(2)), s = m.root().src(0).sym_shape();
          std::vector<std::pair<UOp, UOp>> arg;
          for (size_t i = 0; i < s.size(); i++) arg.push_back({lo[i], s[i] - lo[i] - sz[i]});
          return tuple({G(m).pad_sym(arg), UOp(), UOp()});
        }
        std::vector<std::pair<int64_t, int64_t>> arg;
        auto mp = m.root().marg_pairs();
        const Shape& s = m.root().src(0).shape();
        for (size_t i = 0; i < s.size(); i++) arg.push_back({mp[i].first, s[i] - mp[i].first - mp[i].second});
        return tuple({G(m).pad(arg), UOp(), UOp()});
      },
      UPat(Ops::PERMUTE) >> [](M m) {
        Shape order = m.root().marg(), inv(order.size());
        for (size_t i = 0; i < order.size(); i++) inv[size_t(order[i])] = int64_t(i);
        return tuple({G(m).permute(inv)});
      },
      UPat(Ops::FLIP) >> [](M m) {
        Shape f = m.root().marg(), axes;
        for (size_t i = 0; i < f.size(); i++) if (f[i]) axes.push_back(int64_t(i));
        return tuple({G(m).flip(axes)});
      },
      UPat(Ops::STACK) >> [](M m) {
        // ctx[i]: the i-th slice of the new leading axis
        Grads g;
        Shape s = G(m).shape();
        Shape rest(s.begin() + 1, s.end());
        for (size_t i = 0; i < m.root().src().size(); i++) {
          std::vector<std::pair<int64_t, int64_t>> arg{{int64_t(i), int64_t(i) + 1}};
          for (auto x : rest) arg.push_back({0, x});
          g.push_back(G(m).shrink(arg).reshape(rest));
        }
        return tuple(g);
      },
      UPat(Ops::COPY) >> [](M m) {
        const UOp& src = m.root().src(0);
        std::string d = *src.device();
        if (!is_device_tuple(d)) return tuple({G(m).copy_to_device(d)});
        auto ms = as_multi(lower_multi(src));  // a gather: the gradient is split back as the source was
        return tuple({shard_uop(G(m), ms->devices, ms->axis)});
      },
      UPat(Ops::MSTACK) >> [](M m) { return tuple(mstack_gradient(m.root(), G(m))); },
      UPat(Ops::TUPLE) >> [](M m) { return tuple(Grads(G(m).src().begin(), G(m).src().end())); },
      UPat(Ops::AFTER, {}, {UPat::var("d"), UPat(Ops::CALL, {}, {}, {}, "k")}) >> after_call_gradient,
      // clone/assign: the gradient passes through to the stored value
      UPat(Ops::AFTER, {}, {UPat(), UPat(Ops::STORE)}) >> [](M m) { return tuple({UOp(), G(m)}); },
      UPat(Ops::STORE, {}, {UPat(), UPat()}) >> [](M m) { return tuple({UOp(), G(m)}); },
      UPat(Ops::BITCAST) >> [](M) { return tuple({UOp()}); },
  };
  return pm;
}

// the out axes that are added or expanded when src_shape broadcasts to out_shape
std::vector<int64_t> broadcast_axes(const Shape& src, const Shape& out) {
  if (out.size() < src.size()) throw Error("gradient: cannot broadcast " + shape_str(src) + " into " + shape_str(out));
  size_t nleft = out.size() - src.size();
  std::vector<int64_t> r = iota(int64_t(nleft));
  for (size_t i = 0; i < src.size(); i++) if (src[i] == 1 && out[nleft + i] != 1) r.push_back(int64_t(nleft + i));
  return r;
}
std::vector<int64_t> broadcast_axes(const SShape& src, const SShape& out) {  // the same with sint dims
  if (out.size() < src.size()) throw Error("gradient: cannot broadcast " + sym_shape_str(src) + " into " + sym_shape_str(out));
  auto is1 = [](const UOp& d) { return d.op() == Ops::CONST && d.val().i == 1; };
  size_t nleft = out.size() - src.size();
  std::vector<int64_t> r = iota(int64_t(nleft));
  for (size_t i = 0; i < src.size(); i++) if (is1(src[i]) && !is1(out[nleft + i])) r.push_back(int64_t(nleft + i));
  return r;
}

// a FUNCTION's gradient (tinygrad's call_gradient), as the rules give theirs: its own gradient function where it has
// one; otherwise the body is differentiated with respect to its PARAMs, the output gradients entering as PARAMs after
// the arguments, into a backward FUNCTION of the arguments and the output gradients it uses
UOp call_gradient(const UOp& ctx, const UOp& k, const std::vector<bool>& needed) {
  const UOp& body = k.src(0);
  std::vector<UOp> args(k.src().begin() + 1, k.src().end()), out_grads;
  const CallInfo* info = call_info(k);
  // a kernel (CALL) is opaque: only its own gradient function differentiates it, given the outputs that have gradients
  bool opaque = k.op() == Ops::CALL;
  if (opaque && !(info && info->grad_fn)) {
    const KernelInfo* ki = kernel_info(body);
    throw Error("gradient: the custom kernel " + (ki ? ki->name : std::string(op_name(body.op()))) +
                " has no gradient function (pass grad_fxn to custom_kernel)");
  }
  for (const UOp& g : ctx.src()) if (!opaque || g.op() != Ops::NOOP) out_grads.push_back(g.op() == Ops::NOOP ? UOp() : g);
  if (info && info->grad_fn) {
    Grads g = (*info->grad_fn)(out_grads, k);
    if (g.size() != args.size())
      throw Error("gradient: a " + std::string(op_name(k.op())) + "'s gradient function returned " + std::to_string(g.size()) + " gradients for " +
                  std::to_string(args.size()) + " arguments");
    g.insert(g.begin(), UOp());
    return tuple(g);
  }
  std::map<int64_t, UOp> params = function_params(body);
  std::vector<UOp> root_src, bwd_args = args;
  for (const UOp& g : out_grads) {
    // a device-free gradient (a constant) goes into the body as it is
    root_src.push_back(!g ? UOp::make(Ops::NOOP, dtypes::void_) : !g.device() ? g : g.param_like(int64_t(bwd_args.size())));
    if (g && g.device()) bwd_args.push_back(g);
  }
  std::unordered_set<UOp> targets;
  for (auto& [_, p] : params) targets.insert(p);
  auto grads = compute_gradient(body, UOp::make(Ops::TUPLE, dtypes::void_, root_src), targets);
  std::vector<UOp> outs;
  std::vector<int64_t> out_of(args.size(), -1);
  for (size_t i = 0; i < args.size(); i++) {
    auto p = params.find(int64_t(i));
    if (!needed[i] || p == params.end()) continue;
    if (auto g = grads.find(p->second); g != grads.end()) out_of[i] = int64_t(outs.size()), outs.push_back(g->second);
  }
  if (outs.empty()) return tuple(Grads(k.src().size()));
  // the backward FUNCTION takes only the arguments its body uses, renumbered in slot order
  UOp bwd_body = UOp::make(Ops::TUPLE, dtypes::void_, outs);
  std::unordered_map<UOp, UOp> renumber;
  std::vector<UOp> compact_args;
  for (auto& [slot, p] : function_params(bwd_body)) {
    renumber.emplace(p, bwd_args[size_t(slot)].param_like(int64_t(compact_args.size())));
    compact_args.push_back(bwd_args[size_t(slot)]);
  }
  CallInfo bwd_info;
  if (info && info->name) bwd_info.name = *info->name + "_backward";
  UOp bwd = make_function(bwd_body.substitute(renumber), compact_args, std::move(bwd_info));
  Grads g{UOp()};
  for (size_t i = 0; i < args.size(); i++) g.push_back(out_of[i] < 0 ? UOp() : bwd.gettuple(out_of[i]));
  return tuple(g);
}
}  // namespace

// ***** 2. the walk *****

std::unordered_map<UOp, UOp> compute_gradient(const UOp& root, const UOp& root_grad, const std::unordered_set<UOp>& targets) {
  // the nodes on a path to a target, in topological order; nothing flows through DETACH
  std::vector<UOp> topo = root.toposort(), walk;
  std::unordered_map<const UOpNode*, bool> in_target_path;
  for (const UOp& u : topo) {
    bool r = false;
    for (const UOp& s : u.src()) if ((r = in_target_path[s.get()] || targets.count(s))) break;
    in_target_path[u.get()] = r;
    if (r && u.op() != Ops::DETACH) walk.push_back(u);
  }
  std::unordered_map<UOp, UOp> grads{{root, root_grad}};
  for (auto it = walk.rbegin(); it != walk.rend(); ++it) {
    const UOp& t0 = *it;
    auto gi = grads.find(t0);
    if (gi == grads.end() || gi->second.op() == Ops::NOOP) continue;
    UOp ctx = gi->second;
    if (t0.op() == Ops::GETTUPLE) {  // gathered into a TUPLE on the FUNCTION, which takes them all at once
      const UOp& k = t0.src(0);
      if (k.op() != Ops::FUNCTION) throw Error("gradient: GETTUPLE of " + std::string(op_name(k.op())) + " is not differentiable");
      auto [ki, fresh] = grads.try_emplace(k);
      std::vector<UOp> acc(k.src(0).src().size(), UOp::make(Ops::NOOP, dtypes::void_));
      if (!fresh) acc.assign(ki->second.src().begin(), ki->second.src().end());
      UOp& slot = acc[size_t(t0.arg().i())];
      slot = slot.op() == Ops::NOOP ? ctx : slot + ctx;
      ki->second = UOp::make(Ops::TUPLE, dtypes::void_, acc);
      continue;
    }
    UOp lgrads;
    if (t0.op() == Ops::FUNCTION || t0.op() == Ops::CALL) {
      std::vector<bool> needed;
      for (size_t i = 1; i < t0.src().size(); i++) needed.push_back(targets.count(t0.src(i)) || in_target_path[t0.src(i).get()]);
      lgrads = call_gradient(ctx, t0, needed);
    } else {
      lgrads = pm_gradient().rewrite(t0, &ctx);
    }
    if (!lgrads) throw Error("gradient: failed to compute the gradient of " + std::string(op_name(t0.op())) + " (" + std::string(t0.dtype().name()) + ")");
    if (lgrads.src().size() != t0.src().size())
      internal_error("gradient of " + std::string(op_name(t0.op())) + ": got " + std::to_string(lgrads.src().size()) + " gradients for " +
                     std::to_string(t0.src().size()) + " sources");
    for (size_t i = 0; i < t0.src().size(); i++) {
      const UOp& k = t0.src(i);
      UOp v = lgrads.src(i);
      if (v.op() == Ops::NOOP) continue;
      // the gradient of a broadcast operand is summed back to its shape
      if (k.has_sym_shape() || v.has_sym_shape()) {
        if (k.sym_shape() != v.sym_shape())
          v = v.cast(sum_acc_dtype(v.dtype())).rop(Ops::ADD, broadcast_axes(k.sym_shape(), v.sym_shape())).reshape_sym(k.sym_shape()).cast(v.dtype());
      } else if (k.shape_opt() && v.shape_opt() && *k.shape_opt() != *v.shape_opt())
        v = v.cast(sum_acc_dtype(v.dtype())).rop(Ops::ADD, broadcast_axes(k.shape(), v.shape())).reshape(k.shape()).cast(v.dtype());
      auto [ki, fresh] = grads.try_emplace(k, v);
      if (fresh) continue;
      UOp& acc = ki->second;
      if (acc.op() == Ops::TUPLE && v.op() == Ops::TUPLE) {  // two outputs of one kernel: merged slot by slot
        std::vector<UOp> merged;
        for (size_t j = 0; j < v.src().size(); j++) {
          const UOp &p = acc.src(j), &n = v.src(j);
          merged.push_back(p.op() == Ops::NOOP ? n : n.op() == Ops::NOOP ? p : p + n);
        }
        acc = UOp::make(Ops::TUPLE, dtypes::void_, merged);
      } else acc = acc.op() == Ops::NOOP ? v : acc + v;
    }
  }
  return grads;
}

// ***** 3. the Tensor API *****

std::vector<Tensor> Tensor::gradient(const std::vector<Tensor>& targets, std::optional<Tensor> gradient) const {
  if (!gradient && ndim() != 0)
    throw Error("gradient: when no gradient is provided, backward must be called on a scalar tensor, got shape " + shape_str());
  if (gradient && gradient->sym_shape() != sym_shape())
    throw Error("gradient: the gradient's shape " + gradient->shape_str() + " does not match the tensor's shape " + shape_str());
  auto dt = [](const Tensor& t) { return std::string(t.dtype().name()); };
  if (!is_floating_point()) throw Error("gradient: only float Tensors have gradient, the output is " + dt(*this));
  for (auto& t : targets) {
    if (!t.is_floating_point()) throw Error("gradient: only float Tensors have gradient, a target is " + dt(t) + " " + t.shape_str());
    if (t.dtype().is_weak()) throw Error("gradient: cannot take gradient wrt a weak Tensor (" + dt(t) + " " + t.shape_str() + ")");
  }
  UOp root_grad = gradient ? uop_of(*gradient) : uop_of(tg::const_like(*this, ConstVal(1.0)));
  std::unordered_set<UOp> tset;
  for (auto& t : targets) tset.insert(uop_of(t));
  auto grads = compute_gradient(uop_of(*this), root_grad, tset);
  std::vector<Tensor> ret;
  for (auto& t : targets) {
    auto it = grads.find(uop_of(t));
    ret.push_back(wrap(it != grads.end() ? it->second : uop_of(t).const_like_shaped(ConstVal(0.0))));
  }
  return ret;
}

Tensor& Tensor::backward(std::optional<Tensor> gradient) {
  // every live float tensor with a device in this graph gets a gradient. A weak one (an int tensor times 2.5) is skipped:
  // it has no storage to hold a grad (tinygrad's backward raises on it instead)
  const auto& topo = uop_of(*this).topo_nodes();
  std::unordered_set<const UOpNode*> in_graph(topo.begin(), topo.end());
  std::vector<TensorImpl*> need;
  std::vector<Tensor> targets;
  for (TensorImpl* t : all_tensors()) {
    DType d = t->uop.dtype();
    if (in_graph.count(t->uop.get()) && d.is_float() && !d.is_weak() && t->uop.device()) need.push_back(t);
  }
  for (TensorImpl* t : need) targets.push_back(wrap(t->uop));
  std::vector<Tensor> gs = this->gradient(targets, gradient);
  for (size_t i = 0; i < need.size(); i++) {
    TensorImpl* t = need[i];
    Tensor g = gs[i];
    if (uop_of(g).sym_shape() != t->uop.sym_shape())
      throw Error("backward: grad shape must match tensor shape, " + g.shape_str() + " != " + wrap(t->uop).shape_str());
    if (!g.device()) {
      Tensor tt = wrap(t->uop);
      g = is_device_tuple(*tt.device()) ? g.clone(tt.devices()[0]).shard_like(tt) : g.clone(*tt.device());
    }
    if (!t->grad) t->grad = TensorAccess::impl(g);
    else {
      Tensor old(t->grad);
      old.assign(old + g.to(*old.device()));
    }
  }
  return *this;
}

std::optional<Tensor> Tensor::grad() const { return impl_->grad ? std::optional<Tensor>(Tensor(impl_->grad)) : std::nullopt; }
Tensor& Tensor::set_grad(std::optional<Tensor> g) {
  if (g && g->shape() != shape()) throw Error("set_grad: grad shape must match tensor shape, " + g->shape_str() + " != " + shape_str());
  impl_->grad = g ? TensorAccess::impl(*g) : nullptr;
  return *this;
}
bool Tensor::is_param() const { return impl_->is_param; }
Tensor& Tensor::is_param_(bool is_param) {
  impl_->is_param = is_param;
  return *this;
}
Tensor Tensor::contiguous_backward() const { return alu(*this, Ops::CONTIGUOUS_BACKWARD); }

Tensor Tensor::as_param(int64_t slot) const { return wrap(UOp::param(slot, dtype(), shape(), device())); }

CallInfo call_info_with(Tensor::CallGradFxn grad_fxn, std::optional<std::string> name) {
  CallInfo info;
  info.name = std::move(name);
  if (!grad_fxn) return info;
  info.grad_fn = std::make_shared<const CallGradFxn>([f = std::move(grad_fxn)](const std::vector<UOp>& grads, const UOp& call) {
    if (grads.size() != 1) throw Error("gradient: a function with its own gradient function must have one output, this one has " + std::to_string(grads.size()));
    std::vector<Tensor> call_args;
    for (size_t i = 1; i < call.src().size(); i++) call_args.push_back(wrap(call.src(i)));
    std::vector<UOp> r;
    for (const auto& g : f(wrap(grads[0]), call_args)) r.push_back(g ? uop_of(*g) : UOp());
    return r;
  });
  info.grad_fxn = int64_t(reinterpret_cast<uintptr_t>(info.grad_fn.get()));
  return info;
}

Tensor Tensor::call(const std::vector<Tensor>& rest, const Tensor& fxn, CallGradFxn grad_fxn) const {
  std::vector<UOp> args{uop_of(*this)};
  for (const Tensor& t : rest) args.push_back(uop_of(t));
  return wrap(make_function(uop_of(fxn), args, call_info_with(std::move(grad_fxn), std::nullopt)).gettuple(0));
}

}  // namespace tg
