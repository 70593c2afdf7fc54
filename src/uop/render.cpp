// Names of ops, the graph printer, and the index-expression renderer (tinygrad's uop/render.py).
#include <sstream>
#include <unordered_map>

#include "uop/upat.h"

namespace tg {

std::string_view op_name(Ops op) {
  static const char* names[] = {"NONE",
#define TG_OP_NAME(n) #n,
                                TG_OPS(TG_OP_NAME)
#undef TG_OP_NAME
  };
  return unsigned(op) < unsigned(NUM_OPS) ? names[unsigned(op)] : "?";
}

std::string_view axis_type_name(AxisType t) {
  static const char* names[] = {"", "DEVICE", "GLOBAL", "WARP", "LOCAL", "WEAK", "GROUP_REDUCE", "REDUCE", "UPCAST", "UNROLL", "THREAD",
                                "PLACEHOLDER", "LOOP"};
  return names[int(t)];
}
char axis_letter(AxisType t) { return "?dgwlLGRurtPL"[int(t)]; }

// ***** 1. the graph printer: one node per line, a shared node named x<n>:= once and referred to by name *****

namespace {
std::string argstr(const UOp& u) {
  if ((u.op() == Ops::RANGE) && u.arg().is<Arg::Ints>()) {
    const auto& a = u.arg().ints();
    std::string s = "(";
    for (size_t i = 0; i + 1 < a.size(); i++) s += std::to_string(a[i]) + ", ";
    return s + "AxisType." + std::string(axis_type_name(AxisType(a.back()))) + ")";
  }
  if (u.op() == Ops::REDUCE && u.arg().is<Arg::Ints>() && u.arg().ints().size() == 2)
    return "(Ops." + std::string(op_name(Ops(u.arg().ints()[0]))) + ", " + std::to_string(u.arg().ints()[1]) + ")";
  return u.arg().str();
}

struct PrettyPrinter {
  struct Info { int idx, refs; bool printed; };
  std::unordered_map<const UOpNode*, Info> cache;
  std::ostringstream os;
  void print(const UOp& x, int d) {
    auto [it, fresh] = cache.try_emplace(x.get(), Info{0, 0, false});
    Info& cx = it->second;
    std::string pad(d, ' ');
    if (cx.printed) { os << pad << "x" << cx.idx; return; }
    cx.printed = true;
    os << pad << (cx.refs > 1 ? "x" + std::to_string(cx.idx) + ":=" : "") << "UOp(Ops." << op_name(x.op()) << ", " << x.dtype()
       << ", arg=" << argstr(x) << (x.tag().none() ? "" : ", tag=" + x.tag().str()) << ", src=(";
    for (auto& s : x.src()) { os << "\n"; print(s, d + 2); os << ","; }
    os << "))";
  }
};

// the dfs numbering of tinygrad's pretty_print is recursive pre-order: reproduce it exactly
void dfs_number(const UOp& x, std::unordered_map<const UOpNode*, PrettyPrinter::Info>& cache) {
  for (auto& s : x.src()) {
    auto [it, fresh] = cache.try_emplace(s.get(), PrettyPrinter::Info{int(cache.size()), 0, false});
    if (++it->second.refs == 1) dfs_number(s, cache);
    (void)fresh;
  }
}
}  // namespace

std::string UOp::str() const {
  PrettyPrinter pp;
  dfs_number(*this, pp.cache);
  pp.print(*this, 0);
  return pp.os.str();
}

// ***** 2. the index-expression renderer *****

namespace {
int precedence(Ops op) {
  switch (op) {
    case Ops::MUL: case Ops::FLOORDIV: case Ops::FLOORMOD: return 1;
    case Ops::ADD: case Ops::SUB: return 2;
    case Ops::SHL: case Ops::SHR: return 3;
    case Ops::AND: return 4;
    case Ops::XOR: return 5;
    case Ops::OR: return 6;
    default: return 99;
  }
}
const char* binary_sym(Ops op) {
  switch (op) {
    case Ops::ADD: return "+"; case Ops::SUB: return "-"; case Ops::FLOORDIV: return "//"; case Ops::FLOORMOD: return "%";
    case Ops::SHL: return "<<"; case Ops::SHR: return ">>"; case Ops::MUL: return "*"; case Ops::CMPLT: return "<";
    case Ops::CMPNE: return "!="; case Ops::AND: return "&"; case Ops::OR: return "|"; case Ops::XOR: return "^";
    default: return nullptr;
  }
}
}  // namespace

std::string strip_parens(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
  int d = 0;
  for (size_t i = 1; i + 1 < s.size(); i++)
    if ((d += (s[i] == '(') - (s[i] == ')')) < 0) return s;
  return d == 0 ? s.substr(1, s.size() - 2) : s;
}

namespace {
std::string render_node(const UOp& x, const std::unordered_map<const UOpNode*, std::string>& ctx) {
  auto c = [&](size_t i) -> const std::string& { return ctx.at(x.src(i).get()); };
  switch (x.op()) {
    case Ops::PARAM: return x.arg().param().name ? *x.arg().param().name : "p" + std::to_string(x.arg().param().slot);
    case Ops::BUFFER:
      if (x.arg().is<std::shared_ptr<const ParamArg>>()) return x.arg().param().name ? *x.arg().param().name : "b" + std::to_string(x.arg().param().slot);
      break;
    case Ops::AFTER: return c(0);
    case Ops::SPECIAL: return x.arg().s();
    case Ops::RANGE: {
      const auto& a = x.arg().ints();
      if (x.dtype() == dtypes::void_) return "loop" + std::to_string(a[0]);
      std::string s = "r";
      for (size_t i = 0; i + 1 < a.size(); i++) s += (i ? "_" : "") + (a[i] >= 0 ? std::to_string(a[i]) : "m" + std::to_string(-a[i]));
      return s;
    }
    case Ops::CONST: return x.val().str();
    case Ops::CAST: {
      const UOp& s = x.src(0);
      if (s.op() == Ops::CONST && (s.dtype().is_weak() || s.dtype() == dtypes::bool_)) return s.val().str();
      return "(" + std::string(x.dtype().name()) + ")(" + c(0) + ")";
    }
    case Ops::NEG: return "(-" + c(0) + ")";
    case Ops::RECIPROCAL: return "(1/" + c(0) + ")";
    case Ops::MAX: return "max(" + c(0) + ", " + c(1) + ")";
    case Ops::MULACC: return "(" + c(0) + "*" + c(1) + "+" + c(2) + ")";
    case Ops::WHERE: return "(" + c(1) + " if " + c(0) + " else " + c(2) + ")";
    case Ops::CDIV: return "cdiv(" + c(0) + ", " + c(1) + ")";
    case Ops::CMOD: return "cmod(" + c(0) + ", " + c(1) + ")";
    case Ops::INDEX: case Ops::STAGE: {
      std::string s;
      for (size_t i = 1; i < x.src().size(); i++) s += "[" + strip_parens(c(i)) + "]";
      return s;
    }
    case Ops::STACK: {
      std::string s = "{";
      for (size_t i = 0; i < x.src().size(); i++) s += (i ? "," : "") + c(i);
      return s + "}";
    }
    default: break;
  }
  if (const char* sym = binary_sym(x.op())) {
    int p = precedence(x.op());
    std::string l = c(0), r = c(1);
    if (p != 99) {
      if (precedence(x.src(0).op()) <= p) l = strip_parens(l);
      if (precedence(x.src(1).op()) < p) r = strip_parens(r);
    }
    return "(" + l + sym + r + ")";
  }
  return x.str();
}
}  // namespace

std::string UOp::render(bool simplify) const {
  UOp s = simplify ? this->simplify() : *this;
  std::unordered_map<const UOpNode*, std::string> ctx;
  for (auto* n : s.topo_nodes()) ctx[n] = render_node(UOp(n), ctx);
  return ctx.at(s.get());
}

}  // namespace tg
