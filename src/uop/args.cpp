// The arg objects of later layers, printed as tinygrad's dataclass reprs.
#include "uop/args.h"
#include "uop/multi_arg.h"

#include <cctype>
#include <cstdio>
#include <functional>

#include "uop/movement.h"

namespace tg {

namespace {
size_t mix(size_t h, size_t v) { return h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2)); }
size_t hstr(const std::string& s) { return std::hash<std::string>()(s); }
const char* py_bool(bool b) { return b ? "True" : "False"; }
template <class T, class F> std::string py_tuple(const std::vector<T>& v, F f) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + f(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}
std::string opts_str(const std::vector<Opt>& v) { return py_tuple(v, [](const Opt& o) { return o.str(); }); }
}  // namespace

std::string_view opt_ops_name(OptOps o) {
  static const char* names[] = {"", "TC", "UPCAST", "UNROLL", "LOCAL", "THREAD", "GROUP", "GROUPTOP", "NOLOCALS", "PADTO", "SWAP"};
  return names[int(o)];
}
std::string_view addrspace_name(AddrSpace a) {
  static const char* names[] = {"", "GLOBAL", "LOCAL", "REG", "ALU"};
  return names[int(a)];
}

std::string py_repr(const std::string& s) {
  char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out + q;
}

std::string Opt::str() const {
  return "Opt(op=OptOps." + std::string(opt_ops_name(op)) + ", axis=" + (axis ? std::to_string(*axis) : "None") + ", arg=" + arg.str() + ")";
}
std::string Estimates::str() const {
  return "Estimates(ops=" + std::to_string(ops) + ", lds=" + std::to_string(lds) + ", mem=" + std::to_string(mem) + ")";
}

// ** KernelInfo **

std::string KernelInfo::function_name() const {
  std::string out;
  for (size_t i = 0; i < name.size(); i++) {
    unsigned char c = name[i];
    if (c == 0x1b && i + 1 < name.size() && name[i + 1] == '[') {  // ansistrip: \x1b[K or \x1b[...m
      size_t k = name[i + 2] == 'K' ? i + 2 : name.find('m', i + 2);
      if (k != std::string::npos) { i = k; continue; }
    }
    if (std::isalnum(c) || c == '_') out += char(c);
    else { char b[4]; snprintf(b, sizeof b, "%02X", c); out += b; }
  }
  return out;
}
size_t KernelInfo::hash() const {
  size_t h = mix(hstr(name), axis_types.size());
  for (AxisType t : axis_types) h = mix(h, size_t(t));
  for (auto& o : applied_opts) h = mix(mix(h, size_t(o.op)), o.arg.hash());
  return mix(mix(h, size_t(beam)), size_t(dont_use_locals) + 2 * opts_to_apply.has_value() + 4 * estimates.has_value());
}
bool KernelInfo::equals(const ArgObject& o) const {
  auto* k = dynamic_cast<const KernelInfo*>(&o);
  return k && name == k->name && axis_types == k->axis_types && dont_use_locals == k->dont_use_locals &&
         applied_opts == k->applied_opts && opts_to_apply == k->opts_to_apply && estimates == k->estimates && beam == k->beam;
}
std::string KernelInfo::str() const {
  return "KernelInfo(name=" + py_repr(name) +
         ", axis_types=" + py_tuple(axis_types, [](AxisType t) { return "AxisType." + std::string(axis_type_name(t)); }) +
         ", dont_use_locals=" + py_bool(dont_use_locals) + ", applied_opts=" + opts_str(applied_opts) +
         ", opts_to_apply=" + (opts_to_apply ? opts_str(*opts_to_apply) : "None") +
         ", estimates=" + (estimates ? estimates->str() : "None") + ", beam=" + std::to_string(beam) + ")";
}

// ** BufferizeOpts **

size_t MultiArg::hash() const { return mix(hstr(devices), axis ? size_t(*axis) + 1 : 0); }
bool MultiArg::equals(const ArgObject& o) const {
  auto* m = dynamic_cast<const MultiArg*>(&o);
  return m && devices == m->devices && axis == m->axis;
}
std::string MultiArg::str() const { return "(" + py_repr(devices) + ", " + (axis ? std::to_string(*axis) : "None") + ")"; }
const MultiArg* multi_arg(const Arg& a) {
  auto* o = std::get_if<std::shared_ptr<const ArgObject>>(&a.v);
  return o ? dynamic_cast<const MultiArg*>(o->get()) : nullptr;
}

size_t BufferizeOpts::hash() const {
  size_t h = mix(device.index(), size_t(addrspace) * 2 + removable);
  if (auto* s = std::get_if<std::string>(&device)) h = mix(h, hstr(*s));
  if (auto* v = std::get_if<std::vector<std::string>>(&device)) for (auto& s : *v) h = mix(h, hstr(s));
  if (auto* i = std::get_if<int64_t>(&device)) h = mix(h, size_t(*i));
  return h;
}
bool BufferizeOpts::equals(const ArgObject& o) const {
  auto* b = dynamic_cast<const BufferizeOpts*>(&o);
  return b && device == b->device && addrspace == b->addrspace && removable == b->removable;
}
std::string BufferizeOpts::str() const {
  std::string d = std::visit([](const auto& x) -> std::string {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, std::monostate>) return "None";
    else if constexpr (std::is_same_v<T, std::string>) return py_repr(x);
    else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(x);
    else return py_tuple(x, [](const std::string& s) { return py_repr(s); });
  }, device);
  return "BufferizeOpts(device=" + d + ", addrspace=AddrSpace." + std::string(addrspace_name(addrspace)) +
         ", removable=" + py_bool(removable) + ")";
}

// ** WmmaArg **

size_t WmmaArg::hash() const {
  size_t h = mix(mix(mix(size_t(dims[0]), size_t(dims[1])), size_t(dims[2])), mix(size_t(dtype_in.id), mix(hstr(device), size_t(threads))));
  if (upcast_axes)
    for (auto& v : *upcast_axes) for (auto& [a, n] : v) h = mix(mix(h, size_t(a)), size_t(n));
  return mix(h, upcast_axes.has_value());
}
bool WmmaArg::equals(const ArgObject& o) const {
  auto* w = dynamic_cast<const WmmaArg*>(&o);
  return w && dims == w->dims && dtype_in == w->dtype_in && device == w->device && threads == w->threads && upcast_axes == w->upcast_axes;
}
std::string WmmaArg::str() const {
  auto pair = [](const std::pair<int64_t, int64_t>& p) { return "(" + std::to_string(p.first) + ", " + std::to_string(p.second) + ")"; };
  std::string ax = "None";
  if (upcast_axes) ax = py_tuple(std::vector<Axes>(upcast_axes->begin(), upcast_axes->end()), [&](const Axes& v) { return py_tuple(v, pair); });
  return "((" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " + std::to_string(dims[2]) + "), dtypes." +
         std::string(dtype_in.name()) + ", " + py_repr(device) + ", " + std::to_string(threads) + ", " + ax + ")";
}

// ** CallInfo **

size_t CallInfo::hash() const {
  return mix(mix(size_t(grad_fxn.value_or(-1)), hstr(name.value_or("\x01"))), precompile * 2 + precompile_backward);
}
bool CallInfo::equals(const ArgObject& o) const {
  auto* c = dynamic_cast<const CallInfo*>(&o);
  return c && grad_fxn == c->grad_fxn && grad_fn == c->grad_fn && name == c->name && precompile == c->precompile && precompile_backward == c->precompile_backward;
}
std::string CallInfo::str() const {
  return "CallInfo(" + (grad_fxn ? std::to_string(*grad_fxn) : "None") + ", " + (name ? py_repr(*name) : "None") + ", " +
         py_bool(precompile) + ", " + py_bool(precompile_backward) + ")";
}

std::map<int64_t, UOp> function_params(const UOp& body) {
  std::map<int64_t, UOp> r;
  for (const UOp& x : body.toposort([](const UOp&) { return true; }, false))
    if (x.op() == Ops::PARAM && x.arg().param().slot >= 0) r.emplace(x.arg().param().slot, x);
  return r;
}

UOp make_function(const UOp& body, const std::vector<UOp>& args, CallInfo info) {
  UOp tuple = body.op() == Ops::TUPLE ? body : UOp::make(Ops::TUPLE, dtypes::void_, {body});
  for (const UOp& p : tuple.toposort([](const UOp&) { return true; }, false)) {  // every PARAM: two may share a slot
    if (p.op() != Ops::PARAM || p.arg().param().slot < 0) continue;
    int64_t slot = p.arg().param().slot;
    if (size_t(slot) >= args.size())
      throw Error("call: the function uses argument " + std::to_string(slot) + " but is given " + std::to_string(args.size()));
    const UOp& a = args[size_t(slot)];
    if (p.dtype() != a.dtype() || p.shape_opt() != a.shape_opt())
      throw Error("call: argument " + std::to_string(slot) + " is " + std::string(a.dtype().name()) + " " +
                  (a.shape_opt() ? shape_str(a.shape()) : "unshaped") + ", the function expects " + std::string(p.dtype().name()) +
                  " " + (p.shape_opt() ? shape_str(p.shape()) : "unshaped"));
  }
  std::vector<UOp> src{tuple};
  src.insert(src.end(), args.begin(), args.end());
  return UOp::make(Ops::FUNCTION, dtypes::void_, src, make_arg(std::move(info)));
}

}  // namespace tg
