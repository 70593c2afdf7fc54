#pragma once
// A parser for the index-expression DSL of tests/data/symbolic_cases.txt (and of the symbolic benchmark's dumps):
// Python expression syntax over named variables, built into UOps exactly as tinygrad's Python operators build them.
//
//   vars   "a=var(0,10) r0=range(16,0)"  -> UOp::variable("a", 0, 10), UOp::range(16, 0); "-" for none
//   expr   int literals, True/False, binary + - * // % < > <= >= & | ^, unary -, parentheses, and the methods
//          .where(a,b) .maximum(b) .minimum(b) .ne(b) .eq(b) .logical_not() .valid(cond)
//   case   "mode | vars | expr | tinygrad_render | tinygrad_nodes", the expr of mode `valid` is "VALID => EXPR"
//
// Python semantics that matter for building the same graph as tinygrad:
//  * precedence: comparisons (lowest, not chained) < | < ^ < & < + - < * // % < unary - < postfix method calls
//  * operands that are both plain literals are computed by Python before any UOp exists: 3*4 is the int 12, -2 is an
//    int, 7//-2 is -4 (floor), True&False is the bool False, True+1 is the int 2, 3<4 is the bool True. The same is
//    done here, so `a*0+3*4` builds ADD(MUL(a,0), 12), never MUL(3,4).
//  * a literal next to a UOp becomes a weak CONST (tg::lit), on the side where it was written: `3+a` is ADD(3, a).
//  * a whole expression that is only literals becomes one CONST (UOp.const in the Python tools).
// Bad syntax or a Python error (1//0, a method on a literal) throws tg::Error naming the column.
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tg/error.h"
#include "uop/uop.h"

namespace tg::exprdsl {

// one declared variable: a var(lo,hi) or a range(end,axis) (whose values are 0..end-1)
struct VarDecl {
  std::string name;
  bool is_range = false;
  int64_t lo = 0, hi = 0;  // the inclusive domain
  UOp uop;
};

struct Vars {
  std::vector<VarDecl> decls;
  const VarDecl* find(std::string_view name) const {
    for (auto& d : decls) if (d.name == name) return &d;
    return nullptr;
  }
};

namespace detail {

inline std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) b++;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) e--;
  return std::string(s.substr(b, e - b));
}

inline bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

inline int64_t parse_int(std::string_view s, std::string_view what) {
  if (s.empty()) throw Error("expr_parser: empty integer in " + std::string(what));
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-' || s[0] == '+') { neg = s[0] == '-'; i = 1; }
  if (i == s.size()) throw Error("expr_parser: bad integer '" + std::string(s) + "' in " + std::string(what));
  __int128 v = 0;
  for (; i < s.size(); i++) {
    if (!is_digit(s[i])) throw Error("expr_parser: bad integer '" + std::string(s) + "' in " + std::string(what));
    v = v * 10 + (s[i] - '0');
    if (v > (__int128(1) << 64)) throw Error("expr_parser: integer '" + std::string(s) + "' does not fit in int64");
  }
  if (neg) v = -v;
  if (v > INT64_MAX || v < INT64_MIN) throw Error("expr_parser: integer '" + std::string(s) + "' does not fit in int64");
  return int64_t(v);
}

// a value while parsing: a Python int, a Python bool, or a UOp
struct Val {
  enum Kind { Int, Bool, Node } kind = Int;
  int64_t i = 0;
  UOp u;
  static Val of_int(int64_t v) { Val r; r.kind = Int; r.i = v; return r; }
  static Val of_bool(bool v) { Val r; r.kind = Bool; r.i = v; return r; }
  static Val of_node(UOp v) { Val r; r.kind = Node; r.u = std::move(v); return r; }
  bool is_lit() const { return kind != Node; }
  // the UOp a literal becomes next to a UOp (tinygrad's ufix: UOp.const, weak)
  UOp as_uop() const { return kind == Node ? u : kind == Bool ? lit(bool(i)) : lit(i); }
};

enum class Tok { End, Int, Name, Op, LParen, RParen, Comma, Dot };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  size_t pos = 0;
};

class Parser {
 public:
  Parser(std::string_view text, const Vars& vars) : src_(text), vars_(vars) { tokenize(); }

  UOp parse() {
    Val v = comparison();
    if (peek().kind != Tok::End) fail(peek().pos, "unexpected '" + peek().text + "'");
    return v.as_uop();
  }

 private:
  std::string src_;
  const Vars& vars_;
  std::vector<Token> toks_;
  size_t at_ = 0;

  [[noreturn]] void fail(size_t pos, const std::string& msg) const {
    throw Error("expr_parser: column " + std::to_string(pos + 1) + " of '" + src_ + "': " + msg);
  }

  void tokenize() {
    size_t i = 0, n = src_.size();
    while (i < n) {
      char c = src_[i];
      if (c == ' ' || c == '\t') { i++; continue; }
      size_t st = i;
      if (is_digit(c)) {
        while (i < n && is_digit(src_[i])) i++;
        if (i < n && is_ident_start(src_[i])) fail(i, "bad number literal");
        toks_.push_back({Tok::Int, src_.substr(st, i - st), st});
      } else if (is_ident_start(c)) {
        while (i < n && is_ident(src_[i])) i++;
        toks_.push_back({Tok::Name, src_.substr(st, i - st), st});
      } else if (c == '(') { toks_.push_back({Tok::LParen, "(", st}); i++; }
      else if (c == ')') { toks_.push_back({Tok::RParen, ")", st}); i++; }
      else if (c == ',') { toks_.push_back({Tok::Comma, ",", st}); i++; }
      else if (c == '.') {
        if (i + 1 < n && is_digit(src_[i + 1])) fail(i, "float literals are not supported");
        toks_.push_back({Tok::Dot, ".", st}); i++;
      } else {
        static const char* ops[] = {"//", "<=", ">=", "==", "!=", "**", "<<", ">>", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "~", "="};
        std::string op;
        for (const char* o : ops) {
          std::string_view ov(o);
          if (src_.compare(i, ov.size(), ov) == 0) { op = std::string(ov); break; }
        }
        if (op.empty()) fail(i, std::string("unexpected character '") + c + "'");
        if (op == "==" || op == "!=" || op == "**" || op == "<<" || op == ">>" || op == "/" || op == "~" || op == "=")
          fail(i, "operator '" + op + "' is outside the case grammar (use .eq/.ne, //)");
        toks_.push_back({Tok::Op, op, st});
        i += op.size();
      }
    }
    toks_.push_back({Tok::End, "end of input", n});
  }

  const Token& peek() const { return toks_[at_]; }
  bool peek_op(std::string_view op) const { return peek().kind == Tok::Op && peek().text == op; }
  Token take() { return toks_[at_ < toks_.size() - 1 ? at_++ : at_]; }
  void expect(Tok k, std::string_view what) {
    if (peek().kind != k) fail(peek().pos, "expected " + std::string(what) + ", got '" + peek().text + "'");
    take();
  }

  // Python's int/bool arithmetic on two literals
  Val fold(const std::string& op, const Val& a, const Val& b, size_t pos) const {
    bool both_bool = a.kind == Val::Bool && b.kind == Val::Bool;
    __int128 x = a.i, y = b.i, r = 0;
    if (op == "<") return Val::of_bool(x < y);
    if (op == ">") return Val::of_bool(x > y);
    if (op == "<=") return Val::of_bool(x <= y);
    if (op == ">=") return Val::of_bool(x >= y);
    if (op == "&") return both_bool ? Val::of_bool(x & y) : Val::of_int(int64_t(x & y));
    if (op == "|") return both_bool ? Val::of_bool(x | y) : Val::of_int(int64_t(x | y));
    if (op == "^") return both_bool ? Val::of_bool(x ^ y) : Val::of_int(int64_t(x ^ y));
    if (op == "+") r = x + y;
    else if (op == "-") r = x - y;
    else if (op == "*") r = x * y;
    else if (op == "//" || op == "%") {
      if (y == 0) fail(pos, "integer division or modulo by zero");
      __int128 q = x / y;
      if (x % y != 0 && ((x < 0) != (y < 0))) q -= 1;
      r = op == "//" ? q : x - q * y;
    } else fail(pos, "internal: unknown operator " + op);
    if (r > INT64_MAX || r < INT64_MIN) fail(pos, "integer result does not fit in int64");
    return Val::of_int(int64_t(r));
  }

  // a binary operator exactly as Python evaluates it: literal-only operands fold, otherwise the UOp operators
  Val binary(const std::string& op, const Val& a, const Val& b, size_t pos) const {
    if (a.is_lit() && b.is_lit()) return fold(op, a, b, pos);
    UOp x = a.as_uop(), y = b.as_uop();
    try {
      if (op == "+") return Val::of_node(x + y);
      if (op == "-") return Val::of_node(x - y);
      if (op == "*") return Val::of_node(x * y);
      if (op == "//") return Val::of_node(x / y);
      if (op == "%") return Val::of_node(x % y);
      if (op == "<") return Val::of_node(x < y);
      if (op == ">") return Val::of_node(x > y);
      if (op == "<=") return Val::of_node(x <= y);
      if (op == ">=") return Val::of_node(x >= y);
      if (op == "&") return Val::of_node(x & y);
      if (op == "|") return Val::of_node(x | y);
      if (op == "^") return Val::of_node(x ^ y);
    } catch (const Error& e) {
      fail(pos, std::string("building '") + op + "': " + e.what());
    }
    fail(pos, "internal: unknown operator " + op);
  }

  Val comparison() {
    Val a = bor();
    static const char* cmps[] = {"<", ">", "<=", ">="};
    for (const char* c : cmps) {
      if (peek_op(c)) {
        Token t = take();
        Val b = bor();
        for (const char* c2 : cmps)
          if (peek_op(c2)) fail(peek().pos, "chained comparisons are not supported");
        return binary(t.text, a, b, t.pos);
      }
    }
    return a;
  }
  Val bor() {
    Val a = bxor();
    while (peek_op("|")) { Token t = take(); Val b = bxor(); a = binary("|", a, b, t.pos); }
    return a;
  }
  Val bxor() {
    Val a = band();
    while (peek_op("^")) { Token t = take(); Val b = band(); a = binary("^", a, b, t.pos); }
    return a;
  }
  Val band() {
    Val a = arith();
    while (peek_op("&")) { Token t = take(); Val b = arith(); a = binary("&", a, b, t.pos); }
    return a;
  }
  Val arith() {
    Val a = term();
    while (peek_op("+") || peek_op("-")) { Token t = take(); Val b = term(); a = binary(t.text, a, b, t.pos); }
    return a;
  }
  Val term() {
    Val a = unary();
    while (peek_op("*") || peek_op("//") || peek_op("%")) { Token t = take(); Val b = unary(); a = binary(t.text, a, b, t.pos); }
    return a;
  }
  Val unary() {
    if (peek_op("-")) {
      Token t = take();
      Val a = unary();
      if (a.kind == Val::Node) return Val::of_node(-a.u);
      if (a.i == INT64_MIN) fail(t.pos, "integer result does not fit in int64");
      return Val::of_int(-a.i);  // -True is the int -1
    }
    if (peek_op("+")) fail(peek().pos, "unary + is outside the case grammar");
    return postfix();
  }

  Val arg_value() { return comparison(); }

  Val postfix() {
    Val a = atom();
    while (peek().kind == Tok::Dot) {
      take();
      Token name = take();
      if (name.kind != Tok::Name) fail(name.pos, "expected a method name after '.'");
      expect(Tok::LParen, "'('");
      std::vector<Val> args;
      if (peek().kind != Tok::RParen) {
        args.push_back(arg_value());
        while (peek().kind == Tok::Comma) { take(); args.push_back(arg_value()); }
      }
      expect(Tok::RParen, "')'");
      a = method(a, name, args);
    }
    return a;
  }

  Val method(const Val& self, const Token& name, const std::vector<Val>& args) const {
    const std::string& m = name.text;
    size_t want = m == "where" ? 2 : m == "logical_not" ? 0 : 1;
    if (m != "where" && m != "maximum" && m != "minimum" && m != "ne" && m != "eq" && m != "logical_not" && m != "valid")
      fail(name.pos, "unknown method '" + m + "'");
    if (args.size() != want) fail(name.pos, "." + m + "() takes " + std::to_string(want) + " argument(s), got " + std::to_string(args.size()));
    if (self.is_lit()) fail(name.pos, std::string("'") + (self.kind == Val::Bool ? "bool" : "int") + "' object has no attribute '" + m + "'");
    const UOp& s = self.u;
    try {
      if (m == "where") return Val::of_node(s.where(args[0].as_uop(), args[1].as_uop()));
      if (m == "maximum") return Val::of_node(s.maximum(args[0].as_uop()));
      if (m == "minimum") return Val::of_node(s.minimum(args[0].as_uop()));
      if (m == "ne") return Val::of_node(s.ne(args[0].as_uop()));
      if (m == "eq") return Val::of_node(s.eq(args[0].as_uop()));
      if (m == "logical_not") return Val::of_node(s.logical_not());
      // valid(cond) is cond.where(self, Invalid): the condition must be a UOp, as in Python
      if (args[0].is_lit()) fail(name.pos, ".valid() needs a UOp condition (a literal has no .where)");
      return Val::of_node(s.valid(args[0].u));
    } catch (const Error& e) {
      fail(name.pos, "building ." + m + "(): " + e.what());
    }
  }

  Val atom() {
    Token t = take();
    switch (t.kind) {
      case Tok::Int: return Val::of_int(parse_int(t.text, src_));
      case Tok::Name: {
        if (t.text == "True") return Val::of_bool(true);
        if (t.text == "False") return Val::of_bool(false);
        const VarDecl* d = vars_.find(t.text);
        if (!d) fail(t.pos, "unknown name '" + t.text + "'");
        return Val::of_node(d->uop);
      }
      case Tok::LParen: {
        Val v = comparison();
        if (peek().kind != Tok::RParen) fail(peek().pos, "expected ')', got '" + peek().text + "'");
        take();
        return v;
      }
      default: fail(t.pos, "unexpected '" + t.text + "'");
    }
  }
};

}  // namespace detail

// "a=var(0,10) r0=range(16,0)" (or "-") -> the declared variables, built as UOps
inline Vars parse_vars(std::string_view spec) {
  Vars vs;
  std::string s = detail::trim(spec);
  if (s == "-" || s.empty()) return vs;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') i++;
    if (i >= s.size()) break;
    size_t e = s.find(' ', i);
    if (e == std::string::npos) e = s.size();
    std::string decl = s.substr(i, e - i);
    i = e;
    auto bad = [&](const std::string& why) { throw Error("expr_parser: bad var declaration '" + decl + "': " + why); };
    size_t eq = decl.find('=');
    if (eq == std::string::npos || eq == 0) bad("expected name=var(lo,hi) or rN=range(end,N)");
    std::string name = decl.substr(0, eq), rest = decl.substr(eq + 1);
    for (char c : name) if (!detail::is_ident(c)) bad("bad name");
    if (!detail::is_ident_start(name[0])) bad("bad name");
    bool is_range = false;
    if (rest.rfind("var(", 0) == 0) is_range = false;
    else if (rest.rfind("range(", 0) == 0) is_range = true;
    else bad("expected var(...) or range(...)");
    size_t lp = rest.find('('), comma = rest.find(','), rp = rest.find(')');
    if (comma == std::string::npos || rp != rest.size() - 1 || comma > rp) bad("expected two integer arguments");
    int64_t p0 = detail::parse_int(rest.substr(lp + 1, comma - lp - 1), decl);
    int64_t p1 = detail::parse_int(rest.substr(comma + 1, rp - comma - 1), decl);
    if (vs.find(name)) bad("declared twice");
    if (name == "True" || name == "False") bad("reserved name");
    VarDecl d;
    d.name = name;
    d.is_range = is_range;
    if (is_range) {
      if (name != "r" + std::to_string(p1)) bad("a range must be named r<axis>");
      if (p0 < 1) bad("a range needs end >= 1");
      d.lo = 0, d.hi = p0 - 1;
      d.uop = UOp::range(p0, p1);
    } else {
      if (p0 > p1) bad("lo > hi");
      d.lo = p0, d.hi = p1;
      d.uop = UOp::variable(name, p0, p1);
    }
    vs.decls.push_back(std::move(d));
  }
  return vs;
}

// an expression over vars -> the UOp Python's operators would build (a literal-only expression -> one CONST)
inline UOp parse_expr(std::string_view text, const Vars& vars) { return detail::Parser(text, vars).parse(); }

// one line of tests/data/symbolic_cases.txt
struct Case {
  int line = 0;
  std::string mode, vars, expr, render;  // expr of mode valid is "VALID => EXPR"
  int64_t nodes = 0;
  std::string valid_text() const { auto p = expr.find(" => "); return p == std::string::npos ? "" : expr.substr(0, p); }
  std::string expr_text() const { auto p = expr.find(" => "); return p == std::string::npos ? expr : expr.substr(p + 4); }
};

inline std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    size_t p = line.find(" | ", i);
    if (p == std::string::npos) { out.push_back(detail::trim(line.substr(i))); break; }
    out.push_back(detail::trim(line.substr(i, p - i)));
    i = p + 3;
  }
  return out;
}

inline Case parse_case_line(const std::string& line, int lineno) {
  auto f = split_fields(line);
  if (f.size() != 5) throw Error("expr_parser: line " + std::to_string(lineno) + ": expected 5 fields separated by ' | ', got " + std::to_string(f.size()));
  Case c{lineno, f[0], f[1], f[2], f[3], 0};
  if (c.mode != "symbolic" && c.mode != "sym" && c.mode != "valid") throw Error("expr_parser: line " + std::to_string(lineno) + ": bad mode '" + c.mode + "'");
  if ((c.mode == "valid") != (c.expr.find(" => ") != std::string::npos))
    throw Error("expr_parser: line " + std::to_string(lineno) + ": 'VALID => EXPR' is for mode valid only");
  c.nodes = detail::parse_int(f[4], "tinygrad_nodes of line " + std::to_string(lineno));
  return c;
}

// every case of a case file ('#' lines and blank lines skipped)
inline std::vector<Case> load_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("expr_parser: cannot open " + path);
  std::vector<Case> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    std::string t = detail::trim(line);
    if (t.empty() || t[0] == '#') continue;
    out.push_back(parse_case_line(t, lineno));
  }
  return out;
}

}  // namespace tg::exprdsl
