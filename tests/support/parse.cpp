// A reader for tinygrad's printed UOp graphs. The text is parsed into Python-like values first (None, numbers, strings,
// tuples, enum members, calls such as ParamArg(...)), then each arg is converted with its op in view.
//
// Printing differences of UOp::str() (the round trip holds up to these): a float constant prints as 1.0 where tinygrad
// prints ConstFloat(1.0), and a FLIP arg as (1, 0) where tinygrad prints (True, False).
#include "support/parse.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <unordered_map>

#include "uop/args.h"

namespace tg {

namespace {

struct Val {
  enum Kind { None, Int, Float, Bool, Str, Tuple, Invalid, Dtype, Enum, Call } k = None;
  int64_t i = 0;
  double f = 0;
  std::string s, member;  // Str: the text; Enum: type and member; Call: the callee
  DType dt;
  std::vector<Val> items;                          // Tuple items, Call positional args
  std::vector<std::pair<std::string, Val>> kw;     // Call keyword args
  size_t pos = 0;
};

template <class E, size_t N> std::optional<E> enum_by_name(std::string_view name, std::string_view (*namef)(E)) {
  for (size_t i = 1; i < N; i++) if (namef(E(i)) == name) return E(i);
  return std::nullopt;
}

struct Parser {
  std::string_view s;
  size_t i = 0;
  std::unordered_map<std::string, UOp> names;

  [[noreturn]] void fail(const std::string& what, std::optional<size_t> at = {}) const {
    size_t p = std::min(at.value_or(i), s.size()), line = 1, col = 1;
    for (size_t k = 0; k < p; k++) s[k] == '\n' ? (line++, col = 1) : col++;
    std::string near(s.substr(p, 20));
    if (auto nl = near.find('\n'); nl != std::string::npos) near.resize(nl);
    throw Error("parse_uop: " + what + " at line " + std::to_string(line) + " col " + std::to_string(col) +
                (near.empty() ? " (end of text)" : " near '" + near + "'"));
  }
  void ws() { while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) i++; }
  bool peek(std::string_view t) { ws(); return s.substr(i, t.size()) == t; }
  bool eat(std::string_view t) { if (!peek(t)) return false; i += t.size(); return true; }
  void expect(std::string_view t) { if (!eat(t)) fail("expected '" + std::string(t) + "'"); }
  static bool idch(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  std::string ident() {
    ws();
    size_t b = i;
    while (i < s.size() && idch(s[i])) i++;
    if (b == i) fail("expected a name");
    return std::string(s.substr(b, i - b));
  }

  // ** values **
  Val value() {
    ws();
    Val v;
    v.pos = i;
    if (i >= s.size()) fail("expected a value");
    char c = s[i];
    if (c == '(') {
      i++;
      v.k = Val::Tuple;
      while (!eat(")")) {
        v.items.push_back(value());
        if (!eat(",")) { expect(")"); break; }
      }
      return v;
    }
    if (c == '\'' || c == '"') return string_val();
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') return number();
    std::string id = ident();
    if (id == "None") return v;
    if (id == "True" || id == "False") { v.k = Val::Bool, v.i = id == "True"; return v; }
    if (id == "Invalid") { v.k = Val::Invalid; return v; }
    if (id == "inf" || id == "nan") { i = v.pos; return number(); }
    if (eat(".")) {
      std::string m = ident();
      if (id == "dtypes") {
        v.k = Val::Dtype;
        try { v.dt = dtypes::from_name(m); } catch (const Error&) { fail("unknown dtype 'dtypes." + m + "'", v.pos); }
        return v;
      }
      v.k = Val::Enum, v.s = id, v.member = m;
      return v;
    }
    if (eat("(")) {
      v.k = Val::Call, v.s = id;
      while (!eat(")")) {
        size_t save = i;
        if (std::string k; i < s.size() && idch(s[i]) && !std::isdigit(static_cast<unsigned char>(s[i])) && (k = ident(), eat("=")) && !peek("=")) {
          v.kw.emplace_back(k, value());
        } else {
          i = save;
          if (!v.kw.empty()) fail("positional argument after keyword argument");
          v.items.push_back(value());
        }
        if (!eat(",")) { expect(")"); break; }
      }
      return v;
    }
    fail("unknown value '" + id + "'", v.pos);
  }
  Val string_val() {
    Val v;
    v.pos = i, v.k = Val::Str;
    char q = s[i++];
    for (;; i++) {
      if (i >= s.size() || s[i] == '\n') fail("unterminated string", v.pos);
      if (s[i] == q) { i++; return v; }
      if (s[i] == '\\' && i + 1 < s.size()) {
        char e = s[++i];
        v.s += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      } else v.s += s[i];
    }
  }
  Val number() {
    Val v;
    v.pos = i;
    size_t b = i;
    if (s[i] == '-' || s[i] == '+') i++;
    if (s.substr(i, 3) == "inf" || s.substr(i, 3) == "nan") i += 3;
    else while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                                 ((s[i] == '-' || s[i] == '+') && (s[i - 1] == 'e' || s[i - 1] == 'E')))) i++;
    std::string t(s.substr(b, i - b));
    if (t.empty() || t == "-" || t == "+") fail("expected a number", b);
    char* end = nullptr;
    if (t.find_first_of(".eEna") != std::string::npos) {
      v.k = Val::Float, v.f = std::strtod(t.c_str(), &end);
    } else {
      v.k = Val::Int;
      errno = 0;
      v.i = t[0] == '-' ? std::strtoll(t.c_str(), &end, 10) : int64_t(std::strtoull(t.c_str(), &end, 10));  // uint64 wraps
      if (errno == ERANGE) fail("integer out of range '" + t + "'", b);
    }
    if (end != t.c_str() + t.size()) fail("bad number '" + t + "'", b);
    return v;
  }

  // ** values to args **
  [[noreturn]] void bad(const Val& v, const std::string& what) const { fail(what, v.pos); }
  int64_t as_int(const Val& v, const char* what) const {
    if (v.k == Val::Int || v.k == Val::Bool) return v.i;
    bad(v, std::string(what) + " must be an int");
  }
  std::optional<int64_t> opt_int(const Val& v, const char* what) const {
    return v.k == Val::None ? std::nullopt : std::optional<int64_t>(as_int(v, what));
  }
  bool as_bool(const Val& v, const char* what) const { if (v.k == Val::Bool) return v.i; bad(v, std::string(what) + " must be a bool"); }
  std::string as_str(const Val& v, const char* what) const { if (v.k == Val::Str) return v.s; bad(v, std::string(what) + " must be a string"); }
  template <class E, size_t N> E as_enum(const Val& v, const char* type, std::string_view (*namef)(E)) const {
    if (v.k == Val::Enum && v.s == type)
      if (auto e = enum_by_name<E, N>(v.member, namef)) return *e;
    bad(v, std::string("expected an ") + type + " member");
  }
  AxisType axis_type(const Val& v) const { return as_enum<AxisType, 13>(v, "AxisType", axis_type_name); }
  Ops op_of(const Val& v) const { return as_enum<Ops, NUM_OPS>(v, "Ops", op_name); }
  AddrSpace addrspace(const Val& v) const { return as_enum<AddrSpace, 5>(v, "AddrSpace", addrspace_name); }
  ConstVal const_val(const Val& v) const {
    switch (v.k) {
      case Val::Int: return ConstVal(v.i);
      case Val::Bool: return ConstVal(bool(v.i));
      case Val::Float: return ConstVal(v.f);
      case Val::Invalid: return ConstVal::invalid();
      case Val::Call: if (v.s == "ConstFloat" && v.items.size() == 1 && v.items[0].k == Val::Float) return ConstVal(v.items[0].f); [[fallthrough]];
      default: bad(v, "expected a constant");
    }
  }
  // a call's arguments by field name (positional args take the fields in order)
  std::unordered_map<std::string, const Val*> fields(const Val& v, std::initializer_list<const char*> names) const {
    std::unordered_map<std::string, const Val*> out;
    std::vector<const char*> order(names);
    if (v.items.size() > order.size()) bad(v, v.s + ": too many arguments");
    for (size_t k = 0; k < v.items.size(); k++) out[order[k]] = &v.items[k];
    for (auto& [k, x] : v.kw) {
      if (std::find_if(order.begin(), order.end(), [&](const char* n) { return k == n; }) == order.end()) bad(x, v.s + ": unknown field '" + k + "'");
      if (!out.emplace(k, &x).second) bad(x, v.s + ": field '" + k + "' given twice");
    }
    return out;
  }
  std::vector<Opt> opts(const Val& v) const {
    if (v.k != Val::Tuple) bad(v, "expected a tuple of Opt");
    std::vector<Opt> out;
    for (auto& o : v.items) {
      if (o.k != Val::Call || o.s != "Opt") bad(o, "expected an Opt");
      auto f = fields(o, {"op", "axis", "arg"});
      Opt opt;
      if (!f.count("op")) bad(o, "Opt needs op");
      opt.op = as_enum<OptOps, 11>(*f["op"], "OptOps", opt_ops_name);
      if (f.count("axis")) opt.axis = opt_int(*f["axis"], "Opt axis");
      if (f.count("arg")) opt.arg = plain_arg(*f["arg"]);
      out.push_back(opt);
    }
    return out;
  }
  Arg call_arg(const Val& v) const {
    if (v.s == "ConstFloat") return Arg(const_val(v));
    if (v.s == "ParamArg") {
      auto f = fields(v, {"slot", "dtype", "vmin_vmax", "multiple_of", "name", "addrspace", "axis", "device", "volatile"});
      if (!f.count("slot") || !f.count("dtype") || f["dtype"]->k != Val::Dtype) bad(v, "ParamArg needs a slot and a dtype");
      ParamArg p{as_int(*f["slot"], "ParamArg slot"), f["dtype"]->dt};
      if (auto* x = f["vmin_vmax"]; x && x->k != Val::None) {
        if (x->k != Val::Tuple || x->items.size() != 2) bad(*x, "vmin_vmax must be a pair");
        p.vmin_vmax = {const_val(x->items[0]), const_val(x->items[1])};
      }
      if (auto* x = f["multiple_of"]) p.multiple_of = opt_int(*x, "multiple_of");
      if (auto* x = f["name"]; x && x->k != Val::None) p.name = as_str(*x, "ParamArg name");
      if (auto* x = f["addrspace"]) p.addrspace = x->k == Val::None ? std::nullopt : std::optional(addrspace(*x));
      if (auto* x = f["axis"]) p.axis = opt_int(*x, "ParamArg axis");
      if (auto* x = f["device"]; x && x->k != Val::None) p.device = as_str(*x, "ParamArg device (one device)");
      if (auto* x = f["volatile"]) p.is_volatile = as_bool(*x, "volatile");
      return Arg(std::move(p));
    }
    if (v.s == "KernelInfo") {
      auto f = fields(v, {"name", "axis_types", "dont_use_locals", "applied_opts", "opts_to_apply", "estimates", "beam"});
      KernelInfo k;
      if (auto* x = f["name"]) k.name = as_str(*x, "KernelInfo name");
      if (auto* x = f["axis_types"]) {
        if (x->k != Val::Tuple) bad(*x, "axis_types must be a tuple");
        for (auto& t : x->items) k.axis_types.push_back(axis_type(t));
      }
      if (auto* x = f["dont_use_locals"]) k.dont_use_locals = as_bool(*x, "dont_use_locals");
      if (auto* x = f["applied_opts"]) k.applied_opts = opts(*x);
      if (auto* x = f["opts_to_apply"]; x && x->k != Val::None) k.opts_to_apply = opts(*x);
      if (auto* x = f["estimates"]; x && x->k != Val::None) {
        if (x->k != Val::Call || x->s != "Estimates") bad(*x, "expected Estimates(...)");
        auto e = fields(*x, {"ops", "lds", "mem"});
        Estimates es;
        if (e.count("ops")) es.ops = as_int(*e["ops"], "ops");
        if (e.count("lds")) es.lds = as_int(*e["lds"], "lds");
        if (e.count("mem")) es.mem = as_int(*e["mem"], "mem");
        k.estimates = es;
      }
      if (auto* x = f["beam"]) k.beam = as_int(*x, "beam");
      return make_arg(std::move(k));
    }
    if (v.s == "BufferizeOpts") {
      auto f = fields(v, {"device", "addrspace", "removable"});
      BufferizeOpts b;
      if (auto* x = f["device"]) {
        if (x->k == Val::Str) b.device = x->s;
        else if (x->k == Val::Int) b.device = x->i;
        else if (x->k == Val::Tuple) {
          std::vector<std::string> ds;
          for (auto& d : x->items) ds.push_back(as_str(d, "a device"));
          b.device = ds;
        } else if (x->k != Val::None) bad(*x, "BufferizeOpts device must be a string, a tuple of strings, an int or None");
      }
      if (auto* x = f["addrspace"]) b.addrspace = addrspace(*x);
      if (auto* x = f["removable"]) b.removable = as_bool(*x, "removable");
      return make_arg(std::move(b));
    }
    if (v.s == "CallInfo") {
      auto f = fields(v, {"grad_fxn", "name", "precompile", "precompile_backward", "aux"});
      CallInfo c;
      if (auto* x = f["grad_fxn"]) c.grad_fxn = opt_int(*x, "grad_fxn");
      if (auto* x = f["name"]; x && x->k != Val::None) c.name = as_str(*x, "CallInfo name");
      if (auto* x = f["precompile"]) c.precompile = as_bool(*x, "precompile");
      if (auto* x = f["precompile_backward"]) c.precompile_backward = as_bool(*x, "precompile_backward");
      return make_arg(std::move(c));
    }
    bad(v, "unknown arg type '" + v.s + "'");
  }
  // an arg with no op in view: ints stay ints
  Arg plain_arg(const Val& v) const {
    switch (v.k) {
      case Val::None: return Arg();
      case Val::Int: return Arg(v.i);
      case Val::Bool: case Val::Float: case Val::Invalid: return Arg(const_val(v));
      case Val::Str: return Arg(v.s);
      case Val::Dtype: return Arg(v.dt);
      case Val::Call: return call_arg(v);
      case Val::Enum: bad(v, "a bare " + v.s + "." + v.member + " arg is not supported");
      case Val::Tuple: {
        Arg::Ints out;
        auto& it = v.items;
        // (Ops.ADD, n): a REDUCE; (axis..., AxisType.X): a RANGE; else ints and bools
        if (it.size() == 2 && it[0].k == Val::Enum && it[0].s == "Ops") return Arg(Arg::Ints{int64_t(op_of(it[0])), as_int(it[1], "a reduce count")});
        for (size_t k = 0; k < it.size(); k++) {
          if (k + 1 == it.size() && it[k].k == Val::Enum && it[k].s == "AxisType") out.push_back(int64_t(axis_type(it[k])));
          else if (it[k].k == Val::Int || it[k].k == Val::Bool) out.push_back(it[k].i);
          else bad(it[k], "unsupported tuple item (tuples hold ints, bools, or end in an AxisType)");
        }
        return Arg(std::move(out));
      }
    }
    bad(v, "unsupported arg");
  }
  Arg op_arg(const Val& v, Ops op) const {
    if (op == Ops::CONST && v.k == Val::Int) return Arg(ConstVal(v.i));
    return plain_arg(v);
  }

  // ** nodes **
  UOp node() {
    ws();
    size_t b = i;
    std::string def;
    if (i < s.size() && s[i] == 'x') {
      std::string nm = ident();
      if (!eat(":=")) {
        auto it = names.find(nm);
        if (it == names.end()) fail("reference to undefined '" + nm + "'", b);
        return it->second;
      }
      def = nm;
    }
    expect("UOp(");
    size_t opos = (ws(), i);
    expect("Ops.");
    std::string opn = ident();
    auto op = enum_by_name<Ops, NUM_OPS>(opn, op_name);
    if (!op) fail("unknown op 'Ops." + opn + "'", opos);
    expect(",");
    Val dv = value();
    if (dv.k != Val::Dtype) bad(dv, "expected a dtype");
    expect(",");
    expect("arg=");
    Arg arg = op_arg(value(), *op), tag;
    expect(",");
    if (eat("tag=")) { tag = plain_arg(value()); expect(","); }
    expect("src=(");
    std::vector<UOp> src;
    while (!eat(")")) {
      src.push_back(node());
      if (!eat(",")) { expect(")"); break; }
    }
    expect(")");
    UOp u;
    try { u = UOp::make(*op, dv.dt, src, arg, tag); } catch (const Error& e) { fail(std::string("bad node (") + e.what() + ")", b); }
    if (!def.empty() && !names.emplace(def, u).second) fail("'" + def + "' defined twice", b);
    return u;
  }
};

}  // namespace

UOp parse_uop(std::string_view text) {
  Parser p{text};
  UOp u = p.node();
  p.ws();
  if (p.i != text.size()) p.fail("trailing text after the graph");
  return u;
}

}  // namespace tg
