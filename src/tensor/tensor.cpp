// tg::Tensor core (tinygrad's tensor.py): the live-tensor registry, the mixins' primitives (alu, _broadcasted, _mop,
// _rop), realize/schedule, data reading, assign, device moves.
#include <algorithm>
#include <ostream>
#include <unordered_set>
#include <variant>

#include "engine/realize.h"
#include "schedule/multi.h"
#include "tensor/sint_impl.h"
#include "tensor/tensor_impl.h"
#include "tg/device.h"
#include "uop/movement.h"
#include "uop/nodemap.h"
#include "util/stats.h"

namespace tg {

// ***** 1. the live-tensor registry *****

namespace {
std::unordered_set<TensorImpl*>& registry() {
  static auto& r = *new std::unordered_set<TensorImpl*>();  // never destroyed: static objects' tensors die after it would
  return r;
}
std::string dt_name(DType d) { return std::string(d.name()); }
std::string axis_str(std::optional<int64_t> a) { return a ? std::to_string(*a) : "None"; }
}  // namespace

Tensor::Impl::Impl(UOp u) : uop(std::move(u)) {
  static uint64_t counter = 0;
  seq = counter++;
  registry().insert(this);
}
Tensor::Impl::~Impl() { registry().erase(this); }
size_t live_tensors() { return registry().size(); }
std::vector<TensorImpl*> all_tensors() {
  std::vector<TensorImpl*> r(registry().begin(), registry().end());
  std::sort(r.begin(), r.end(), [](TensorImpl* a, TensorImpl* b) { return a->seq < b->seq; });
  return r;
}

void apply_map_to_tensors(const std::unordered_map<UOp, UOp>& applied_map) {
  // a tensor is in scope when its graph reaches a key of the map (tinygrad's topovisit with a shared memo). The walk
  // ends at the first key it meets, so a tensor that is itself a key (one just realized) costs one lookup, and it does
  // not enter nodes made before every key: their graphs hold only older nodes (a model's weights and their lazy
  // decodes, walked whole at every realize otherwise: ~25 ms of a 128-token prompt of the 110M llama)
  uint64_t oldest = UINT64_MAX;
  for (auto& [k, _] : applied_map) oldest = std::min(oldest, k.get()->serial);
  static thread_local NodeMap<bool> reaches;  // reused (as is the stack): nothing below re-enters this
  static thread_local std::vector<std::pair<const UOpNode*, uint32_t>> stack;
  struct Clear { ~Clear() { reaches.clear(), stack.clear(); } } clear_after;
  auto in_scope = [&](const UOpNode* root) {
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      bool hit = false;
      if (next == 0 && n->serial < oldest) {
        stack.pop_back();
        continue;
      }
      if (bool* r = next == 0 ? reaches.find(UOp(n)) : nullptr) {
        if (!*r) { stack.pop_back(); continue; }
        hit = true;
      } else if (next == 0 && applied_map.contains(UOp(n))) {
        hit = true;
      } else if (next < n->nsrc) {
        stack.push_back({n->srcs()[next++].get(), 0});
        continue;
      }
      if (hit) {  // everything on the stack reaches the key
        for (auto& [m, _] : stack) reaches[UOp(m)] = true;
        stack.clear();
        return true;
      }
      reaches[UOp(n)] = false;
      stack.pop_back();
    }
    return false;
  };
  std::vector<TensorImpl*> scope;
  for (TensorImpl* t : registry())
    if (in_scope(t->uop.get())) scope.push_back(t);
  if (scope.empty()) return;
  std::vector<UOp> srcs;
  for (auto* t : scope) srcs.push_back(t->uop);
  UOp sink = UOp::sink(srcs), new_sink = sink.substitute(applied_map, nullptr, true);
  for (size_t i = 0; i < scope.size(); i++) scope[i]->uop = new_sink.src(i);
}

// ***** 2. construction and properties *****

Tensor::Tensor() : Tensor(scalar(ConstVal(0.0), std::nullopt, "")) {}
Tensor::Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {
  if (!impl_ || !impl_->uop) internal_error("Tensor built from an empty impl");
}
Tensor Tensor::scalar(ConstVal v, std::optional<DType> dtype, const std::string&) { return wrap(UOp::const_(v, dtype)); }

const Shape& Tensor::shape() const { return uop_of(*this).shape(); }
SymShape Tensor::sym_shape() const { return to_symshape(uop_of(*this).sym_shape()); }
int64_t Tensor::ndim() const {
  const UOp& u = uop_of(*this);
  return int64_t(u.has_sym_shape() ? u.sym_shape().size() : u.shape().size());
}
DType Tensor::dtype() const { return uop_of(*this).dtype(); }
std::optional<std::string> Tensor::device() const { return uop_of(*this).device(); }
int64_t Tensor::numel() const {
  int64_t n = 1;
  for (auto s : shape()) n *= s;
  return n;
}
int64_t Tensor::element_size() const { return uop_of(*this).element_size(); }
Shape Tensor::max_shape() const {
  Shape r;
  for (const sint& s : sym_shape()) r.push_back(s.vmax());
  return r;
}
int64_t Tensor::max_numel() const {
  int64_t n = 1;
  for (auto s : max_shape()) n *= s;
  return n;
}
std::string Tensor::graph() const { return uop_of(*this).str(); }
std::string Tensor::shape_str() const {
  const UOp& u = uop_of(*this);
  return u.has_sym_shape() ? sym_shape_str(u.sym_shape()) : tg::shape_str(shape());
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << "<Tensor " << t.device().value_or("None") << " " << t.shape_str() << " " << t.dtype().name() << ">";
}

// ***** 3. the primitives the ops are built from *****

namespace {
std::string shapes_and_dtypes(std::span<const UOp> s) {
  std::string r;
  for (size_t i = 0; i < s.size(); i++)
    r += (i ? ", " : "") + (s[i].has_sym_shape() ? sym_shape_str(s[i].sym_shape()) : s[i].shape_opt() ? tg::shape_str(*s[i].shape_opt()) : std::string("()")) +
         ":" + dt_name(s[i].dtype());
  return r;
}
}  // namespace

Tensor alu(const Tensor& self, Ops op, std::initializer_list<Tensor> src, const Arg& arg) {
  std::vector<UOp> s{uop_of(self)};
  for (auto& t : src) s.push_back(uop_of(t));
  // broadcasting is implicit in the ALU node; check it here so the error names the operands
  if (GroupOp::Broadcastable.has(op) && std::none_of(s.begin(), s.end(), [](const UOp& u) { return u.has_sym_shape(); })) {
    size_t nd = 0;
    for (auto& u : s) nd = std::max(nd, u.shape().size());
    Shape out(nd, 1);
    for (auto& u : s)
      for (size_t i = 0; i < u.shape().size(); i++) {
        int64_t &o = out[nd - u.shape().size() + i], x = u.shape()[i];
        if (x == 1) continue;
        if (o != 1 && o != x) throw Error(std::string(op_name(op)) + ": cannot broadcast shapes " + shapes_and_dtypes(s));
        o = x;
      }
  }
  try {
    if (op == Ops::CAST || op == Ops::BITCAST) return wrap(UOp::make(op, arg.dtype(), s, arg));
    UOp ret = UOp::make(op, s, arg);
    if (GroupOp::Broadcastable.has(op) && std::any_of(s.begin(), s.end(), [](const UOp& u) { return u.has_sym_shape(); }))
      (void)ret.sym_shape();  // symbolic dims are checked here
    return wrap(ret);
  } catch (const Error& e) {
    std::string w = e.what();
    if (w.find(" (operands ") != std::string::npos) throw;
    throw Error(w + " (operands " + shapes_and_dtypes(s) + ")");
  }
}

Tensor const_like(const Tensor& self, ConstVal v, std::optional<DType> dtype) {
  UOp ret = UOp::const_(v, dtype ? *dtype : self.dtype());
  if (uop_of(self).has_sym_shape()) return wrap(ret).reshape(SymShape(size_t(self.ndim()), sint(1))).expand(self.sym_shape());
  const Shape& s = self.shape();
  return wrap(!s.empty() && ret.shape() != s ? ret.mop(Ops::EXPAND, s) : ret);
}

std::pair<Tensor, Tensor> broadcasted(const Tensor& self, const Tensor& y, bool reverse) {
  const Tensor &a = reverse ? y : self, &b = reverse ? self : y;
  DType out = least_upper_dtype({a.dtype(), b.dtype()});
  // a bare weak CONST stays weak (lifted to the weak kind of the result); anything else is cast
  auto promote = [&](const Tensor& t) {
    UOp base = uop_of(t).base();
    if (base.is_invalid()) return t;
    if (t.dtype().is_weak() && base.op() == Ops::CONST) return tg::const_like(t, base.val(), weak_dtype(out));
    return t.cast(out);
  };
  return {promote(a), promote(b)};
}

Tensor binop(const Tensor& self, Ops op, const Tensor& x, bool reverse) {
  auto [l, r] = broadcasted(self, x, reverse);
  return alu(l, op, {r});
}

int64_t resolve_dim(const Tensor& t, int64_t dim, bool extra, const char* op) {
  int64_t total = t.ndim() + (extra ? 1 : 0), hi = std::max<int64_t>(1, total);
  if (dim < -hi || dim > hi - 1)
    throw Error(std::string(op) + ": dim " + std::to_string(dim) + " out of range [" + std::to_string(-hi) + ", " + std::to_string(hi - 1) +
                "] for shape " + t.shape_str());
  return dim < 0 ? dim + total : dim;
}

Tensor mop_stack(const Tensor& self, const std::vector<Tensor>& others) {
  std::vector<UOp> s{uop_of(self)};
  for (auto& t : others) s.push_back(uop_of(t));
  DType dt = *dtype_from_uop(Ops::STACK, s, {});
  for (auto& u : s) if (!u.base().is_invalid()) u = u.op() == Ops::CONST ? UOp::const_(u.val(), dt) : u.cast(dt);
  return wrap(UOp::make(Ops::STACK, dt, s));
}

Tensor reduce_(const Tensor& self_in, Ops op, const Axis& axis, bool keepdim) {
  Tensor self = self_in.cast(strong_dtype(self_in.dtype()));
  std::vector<int64_t> axes;
  if (!axis.axes) for (int64_t i = 0; i < self.ndim(); i++) axes.push_back(i);
  else for (auto a : *axis.axes) axes.push_back(resolve_dim(self, a, false, op == Ops::ADD ? "sum" : op == Ops::MUL ? "prod" : "max"));
  if (self.ndim() == 0) axes.clear();
  Tensor ret = wrap(uop_of(self).rop(op, axes));
  if (!keepdim) return ret;
  SymShape ks = self.sym_shape();
  for (auto a : axes) ks[size_t(a)] = 1;
  return ret.reshape(ks);
}

// ***** 4. realize, schedule, data *****

std::pair<UOp, VarVals> linear_with_vars(const std::vector<Tensor>& tensors) {
  std::vector<UOp> srcs;
  std::unordered_map<UOp, UOp> lowered;  // multi-device graphs, run per device: their shards are what is realized
  for (auto& t : tensors) {
    if (t.dtype().is_weak() && t.device()) throw Error("realize: cannot realize a weak dtype (" + dt_name(t.dtype()) + "); cast to a concrete dtype first");
    UOp u = uop_of(t);
    if (has_multi(u)) {
      u = lowered.emplace(u, lower_multi(u)).first->second;
      if (auto m = as_multi(u)) {
        for (auto& s : m->shards) if (!s.is_virtual() && !s.has_buffer_identity()) srcs.push_back(s);
        continue;
      }
    }
    srcs.push_back(u);
  }
  if (!lowered.empty()) apply_map_to_tensors(lowered);
  if (srcs.empty()) return {UOp::make(Ops::LINEAR, dtypes::void_, {}), {}};
  auto st = Clock::now();
  Scheduled s = schedule_tensor_graph(UOp::sink(srcs));
  engine_stats().schedule_s += since(st);
  apply_map_to_tensors(std::unordered_map<UOp, UOp>(s.becomes.begin(), s.becomes.end()));
  return {std::move(s.linear), std::move(s.vars)};
}

UOp schedule_linear(const std::vector<Tensor>& tensors) {
  auto [linear, vars] = linear_with_vars(tensors);
  if (!vars.empty()) throw Error("schedule_linear: the schedule has bound variables, use linear_with_vars");
  return linear;
}

namespace {
std::vector<Tensor> unrealized(const std::vector<Tensor>& tensors) {  // buffer-backed and device-free ones have nothing to run
  std::vector<Tensor> r;
  for (auto& t : tensors)
    if (!uop_of(t).is_virtual() && !uop_of(t).has_buffer_identity()) r.push_back(t);
  return r;
}
}  // namespace

Schedule Tensor::schedule_linear(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> todo = unrealized(tensors);
  if (todo.empty()) return {};
  auto [linear, vars] = tg::linear_with_vars(todo);
  return TensorAccess::make(std::move(linear), std::move(vars));
}
std::pair<Schedule, std::map<std::string, int64_t>> Tensor::linear_with_vars(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> todo = unrealized(tensors);
  if (todo.empty()) return {};
  auto [linear, vars] = tg::linear_with_vars(todo);
  return {TensorAccess::make(std::move(linear), vars), vars};
}
void Tensor::realize(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> todo = unrealized(tensors);
  if (todo.empty()) return;
  auto [linear, vars] = tg::linear_with_vars(todo);
  run_linear(linear, vars);
}

size_t Schedule::size() const { return impl_ ? impl_->linear.src().size() : 0; }
std::string Schedule::str() const { return impl_ ? impl_->linear.str() : ""; }
void Schedule::run() const {
  if (size()) run_linear(impl_->linear, impl_->vars);
}
Tensor& Tensor::realize() {
  realize({*this});
  return *this;
}

namespace {
// tinygrad's UOp.buffer: through the nodes that share their source's storage, then a view that reads one contiguous
// range of a BUFFER (UOp.contiguous_view) is that range. The BUFFER and the range's byte offset, or why there is none
std::variant<std::pair<UOp, size_t>, std::string> viewed_buffer(UOp u) {
  auto through = [](UOp u) {
    while (OpSet{Ops::CONTIGUOUS, Ops::CONTIGUOUS_BACKWARD, Ops::RESHAPE, Ops::DETACH, Ops::AFTER}.has(u.op())) u = u.src(0);
    return u;
  };
  u = through(u);
  size_t offset = 0;
  if (u.op() != Ops::BUFFER) {
    auto cv = u.contiguous_view();
    if (!cv) return "a non-contiguous view (" + std::string(op_name(u.op())) + ")";
    offset = size_t(cv->second) * size_t(cv->first.dtype().itemsize());
    u = through(cv->first.base());
  }
  if (u.op() != Ops::BUFFER) return "no buffer behind the view (" + std::string(op_name(u.op())) + ")";
  return std::pair{u, offset};
}
}  // namespace

std::vector<uint8_t> Tensor::data() const {
  // as tinygrad: a value read while TinyJit captures would be baked into every replay
  if (launch_recorder()) throw Error("data: cannot read tensor data while TinyJit captures (the value would be baked into the replay)");
  if (dtype().is_weak()) return cast(strong_dtype(dtype())).data();
  if (numel() == 0) return {};
  // tinygrad's _buffer: make it contiguous (on CPU when it has no device), realize, read the BUFFER behind it. A view
  // of a DISK file (movement ops and bitcasts of its BUFFER: nothing pending) is read as it is, with no schedule
  auto stored = [](UOp u) {
    while (GroupOp::Movement.has(u.op()) || u.op() == Ops::BITCAST) u = u.src(0);
    return u.op() == Ops::BUFFER;
  };
  bool in_place = device() && device()->starts_with("DISK:") && stored(uop_of(*this));
  Tensor x = in_place ? *this : contiguous();
  if (!device() || is_device_tuple(*device())) x = x.clone("CPU");
  if (!in_place) x.realize();
  auto vb = viewed_buffer(uop_of(x));
  if (auto* e = std::get_if<std::string>(&vb)) throw Error("data: reading " + *e + " is not supported");
  auto [u, offset] = std::get<0>(vb);
  Buffer& b = buffer_of(u);
  size_t n = size_t(numel()) * size_t(dtype().itemsize());
  if (offset + n > b.nbytes()) internal_error("data: a view past the end of its buffer");
  // read only the viewed range: a view of a large DISK file must not read the whole file
  std::vector<uint8_t> out(n);
  b.dev().copyout(out.data(), static_cast<char*>(b.ptr()) + offset, n);
  return out;
}

Tensor Tensor::from_bytes(const std::vector<uint8_t>& bytes, DType src_dtype, const Shape& shape, std::optional<DType> dtype,
                          const std::string& device) {
  if (dtype && dtype->is_weak()) throw Error("from_vector: cannot create storage for weak dtype " + dt_name(*dtype));
  int64_t n = 1;
  for (auto s : shape) {
    if (s < 0) throw Error("from_vector: negative dimension in shape " + tg::shape_str(shape));
    n *= s;
  }
  if (size_t(n) * src_dtype.itemsize() != bytes.size())
    throw Error("from_vector: " + std::to_string(bytes.size() / src_dtype.itemsize()) + " elements of " + dt_name(src_dtype) +
                " do not fill shape " + tg::shape_str(shape));
  // tinygrad stages host data in a PYTHON device buffer and COPYs it over; we write the device BUFFER directly
  UOp buf = UOp::new_buffer(canonicalize_device(device), n, src_dtype);
  if (n) buffer_of(buf).copyin(bytes.data(), bytes.size());
  Tensor ret = wrap(buf.reshape(shape));
  return dtype ? ret.cast(*dtype) : ret;
}

Tensor Tensor::contiguous() const {
  UOp u = uop_of(*this).contiguous();
  return u == uop_of(*this) ? *this : wrap(u);
}
Tensor Tensor::detach() const { return alu(*this, Ops::DETACH); }

Tensor Tensor::to(const std::string& device) const {
  const UOp& u = uop_of(*this);
  if (!u.device()) return *this;
  if (is_device_tuple(device)) return to(parse_device_tuple(device));
  std::string dev = canonicalize_device(device);
  if (dev == *u.device()) return *this;
  Tensor ret = wrap(u.copy_to_device(dev));
  if (impl_->grad) ret.impl_->grad = Tensor(impl_->grad).to(dev).impl_;
  return ret.is_param_(is_param());
}

Tensor Tensor::to_mapped(const std::string& device) const {
  std::string dev = canonicalize_device(device);
  std::optional<std::string> src = this->device();
  if (!src || !src->starts_with("DISK:") || !(dev == "CPU" || dev.starts_with("CPU:")) || numel() == 0) return to(device);
  auto vb = viewed_buffer(uop_of(*this));
  if (auto* e = std::get_if<std::string>(&vb)) throw Error("to_mapped: the tensor is " + *e + ", not one byte range of its file: use to()");
  auto [u, offset] = std::get<0>(vb);
  std::shared_ptr<Buffer> file = shared_buffer_of(u);
  if (!file->dev().host_mapped()) return to(device);
  char* p = static_cast<char*>(file->ptr()) + offset;
  // a CPU kernel's widest aligned access is 16 bytes (float4 without SIMD, late/coalesce.cpp); its buffers are 64-byte aligned
  if (reinterpret_cast<uintptr_t>(p) % 16) return to(device);
  UOp buf = UOp::new_buffer(dev, numel(), dtype());
  buffer_of(buf).use_external(p, file);
  return wrap(buf.reshape(shape()));
}

Tensor& Tensor::to_(const std::string& device) {
  Tensor real = to(device);
  if (impl_->grad && real.impl_->grad) Tensor(impl_->grad).replace(Tensor(real.impl_->grad));
  return replace(real);
}

namespace {
UOp clone_uop(const UOp& u, const std::string& device) {
  std::optional<std::string> dev = device.empty() ? u.device() : std::optional<std::string>(canonicalize_device(device));
  UOp ret = u.empty_like(std::nullopt, dev);
  UOp src = !u.device() || u.device() == dev ? u : u.copy_to_device(*dev);
  return ret.after({ret.store(src.cast(ret.dtype()))});
}
}  // namespace

Tensor Tensor::clone(const std::string& device) const {
  Tensor ret = wrap(clone_uop(uop_of(*this), device));
  if (impl_->grad) ret.impl_->grad = Tensor(impl_->grad).clone(device).impl_;
  return ret.is_param_(is_param());
}

Tensor& Tensor::replace(const Tensor& x) {
  if (shape() != x.shape()) throw Error("replace: shape mismatch " + shape_str() + " != " + x.shape_str());
  impl_->uop = uop_of(x);
  return *this;
}

Tensor& Tensor::assign(const Tensor& x_in) {
  if (dtype().is_weak()) impl_->uop = clone_uop(uop_of(*this), "");
  if (uop_of(*this) == uop_of(x_in)) return *this;  // a self assign is a no-op
  Tensor x = x_in;
  try {
    x = x.expand(shape());
  } catch (const Error&) {
    throw Error("assign: cannot broadcast " + x_in.shape_str() + " to " + shape_str());
  }
  if (x.dtype().is_weak()) x = x.cast(least_upper_dtype({dtype(), x.dtype()}));
  if (x.dtype() != dtype()) throw Error("assign: dtype mismatch " + dt_name(dtype()) + " != " + dt_name(x.dtype()));
  if (uop_of(x).device() && device() && device() != x.device())
    throw Error("assign: device mismatch " + *device() + " != " + *x.device());
  if (device() && is_device_tuple(*device()) && uop_of(x).device() && shard_axis() != x.shard_axis())
    throw Error("assign: multi axis mismatch " + axis_str(shard_axis()) + " != " + axis_str(x.shard_axis()));
  const UOp& self_u = uop_of(*this);
  UOp assign = self_u.after({self_u.store(uop_of(x))});
  UOp ib = self_u;
  while (!ib.has_buffer_identity() && (GroupOp::Movement.has(ib.op()) || ib.op() == Ops::BITCAST || ib.op() == Ops::DETACH)) ib = ib.src(0);
  // a view assign replaces at the buffer-identity level, so every tensor viewing that buffer sees the write
  if (ib != self_u && ib.has_buffer_identity(true)) apply_map_to_tensors({{ib, ib.after({assign})}});
  else impl_->uop = assign;
  return *this;
}

}  // namespace tg
