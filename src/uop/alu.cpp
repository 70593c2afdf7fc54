// Evaluating ops on constants (tinygrad's exec_alu) and a small interpreter for ALU graphs.
#include <bit>
#include <cmath>
#include <limits>

#include "uop/uop.h"

namespace tg {

namespace {
int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_sub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
int64_t py_floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(0, a);
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t py_cdiv(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? wrap_sub(0, a) : a / b; }

// an int result wrapped to the width of dtype (as ctypes does); weakint keeps int64
ConstVal truncate(DType dt, ConstVal v) {
  if (v.is_invalid()) return v;
  if (dt == dtypes::bool_) return ConstVal(v.truthy());
  if (dt.is_float()) return dt == dtypes::weakfloat ? ConstVal(v.as_double()) : dt.const_(ConstVal(v.as_double()));
  if (!dt.is_int()) return v;
  int64_t x = v.is_float() ? (std::isfinite(v.f) ? int64_t(std::trunc(v.f)) : 0) : v.i;
  switch (dt.id) {
    case DTypeId::int8: return int64_t(int8_t(x));
    case DTypeId::uint8: return int64_t(uint8_t(x));
    case DTypeId::int16: return int64_t(int16_t(x));
    case DTypeId::uint16: return int64_t(uint16_t(x));
    case DTypeId::int32: return int64_t(int32_t(x));
    case DTypeId::uint32: return int64_t(uint32_t(x));
    default: return x;
  }
}
}  // namespace

ConstVal exec_alu(Ops op, DType dtype, std::span<const ConstVal> v, bool truncate_output) {
  using enum Ops;
  if (GroupOp::Binary.has(op)) for (auto& x : v) if (x.is_invalid()) return ConstVal::invalid();
  for (auto& x : v) if (x.is_invalid() && op != WHERE) return ConstVal::invalid();
  bool fl = false;
  for (auto& x : v) fl |= x.is_float();
  auto d = [&](size_t i) { return v[i].as_double(); };
  auto i = [&](size_t k) { return v[k].i; };
  ConstVal r;
  switch (op) {
    case LOG2: r = d(0) > 0 ? std::log2(d(0)) : d(0) == 0 ? -INFINITY : NAN; break;
    case EXP2: r = std::exp2(d(0)); break;
    case SQRT: r = d(0) >= 0 ? std::sqrt(d(0)) : NAN; break;
    case RECIPROCAL: r = d(0) != 0 ? 1.0 / d(0) : std::copysign(INFINITY, d(0)); break;
    case SIN: r = std::isinf(d(0)) ? NAN : std::sin(d(0)); break;
    case TRUNC: r = fl ? ConstVal(std::isfinite(d(0)) ? std::trunc(d(0)) : d(0)) : v[0]; break;
    case NEG: r = fl ? ConstVal(-d(0)) : ConstVal(wrap_sub(0, i(0))); break;
    case ADD: r = fl ? ConstVal(d(0) + d(1)) : ConstVal(wrap_add(i(0), i(1))); break;
    case SUB: r = fl ? ConstVal(d(0) - d(1)) : ConstVal(wrap_sub(i(0), i(1))); break;
    case MUL: r = fl ? ConstVal(d(0) * d(1)) : ConstVal(wrap_mul(i(0), i(1))); break;
    case FDIV: r = d(1) != 0 ? d(0) / d(1) : (d(0) == 0 || std::isnan(d(0))) ? NAN : std::copysign(INFINITY, d(0)) * std::copysign(1.0, d(1)); break;
    case POW: {
      double x = d(0), y = d(1);
      double p = std::pow(x, y);
      r = fl ? ConstVal(p) : (y >= 0 && std::fabs(p) < 9e18 ? ConstVal(int64_t(std::llround(p))) : ConstVal(p));
      break;
    }
    case CMPNE: r = ConstVal(!(v[0] == v[1]) || (fl && (std::isnan(d(0)) || std::isnan(d(1))))); break;
    case CMPEQ: r = ConstVal(v[0] == v[1] && !(fl && std::isnan(d(0)))); break;
    case CMPLT: r = ConstVal(fl ? d(0) < d(1) : i(0) < i(1)); break;
    case XOR: r = ConstVal(i(0) ^ i(1)); break;
    case OR: r = ConstVal(i(0) | i(1)); break;
    case AND: r = ConstVal(i(0) & i(1)); break;
    case SHR: r = ConstVal(i(1) >= 64 ? (i(0) < 0 ? -1 : 0) : i(1) < 0 ? i(0) : i(0) >> i(1)); break;
    case SHL: r = ConstVal(i(1) >= 64 || i(1) < 0 ? int64_t(0) : int64_t(uint64_t(i(0)) << i(1))); break;
    case MAX: r = fl ? ConstVal(d(1) > d(0) ? d(1) : d(0)) : ConstVal(std::max(i(0), i(1))); break;
    case CDIV: r = ConstVal(py_cdiv(i(0), i(1))); break;
    case CMOD: r = ConstVal(wrap_sub(i(0), wrap_mul(py_cdiv(i(0), i(1)), i(1)))); break;
    case FLOORDIV: r = ConstVal(py_floordiv(i(0), i(1))); break;
    case FLOORMOD: r = ConstVal(wrap_sub(i(0), wrap_mul(py_floordiv(i(0), i(1)), i(1)))); break;
    case MULACC: r = fl ? ConstVal(d(0) * d(1) + d(2)) : ConstVal(wrap_add(wrap_mul(i(0), i(1)), i(2))); break;
    case WHERE: if (v[0].is_invalid()) return v[0]; r = v[0].truthy() ? v[1] : v[2]; break;
    default: throw Error("exec_alu: " + std::string(op_name(op)) + " cannot be evaluated on constants");
  }
  if (v.size() && !fl && (op == XOR || op == OR || op == AND) && v[0].is_bool() && v[1].is_bool()) r = ConstVal(r.i != 0);
  return truncate_output ? truncate(dtype, r) : r;
}

// the value as `from`'s bit pattern, read back as `to` (tinygrad's dtype.bitcast)
ConstVal bitcast_const(ConstVal v, DType from, DType to) {
  uint64_t bits = 0;
  if (from.is_float()) {
    double x = v.as_double();
    if (from == dtypes::float64) bits = std::bit_cast<uint64_t>(x);
    else if (from == dtypes::float32) bits = std::bit_cast<uint32_t>(float(x));
    else if (from == dtypes::float16) bits = std::bit_cast<uint16_t>(_Float16(x));
    else throw Error("bitcast_const: unsupported dtype " + std::string(from.name()));
  } else bits = uint64_t(v.is_float() ? int64_t(v.f) : v.i);
  int nb = from.bitsize();
  if (nb < 64) bits &= (uint64_t(1) << nb) - 1;
  if (to.is_float()) {
    if (to == dtypes::float64) return ConstVal(std::bit_cast<double>(bits));
    if (to == dtypes::float32) return ConstVal(double(std::bit_cast<float>(uint32_t(bits))));
    if (to == dtypes::float16) return ConstVal(double(std::bit_cast<_Float16>(uint16_t(bits))));
    throw Error("bitcast_const: unsupported dtype " + std::string(to.name()));
  }
  if (to == dtypes::bool_) return ConstVal(bits != 0);
  return to.const_(ConstVal(int64_t(bits)));
}

ConstVal eval_uop(const UOp& root, const std::unordered_map<UOp, ConstVal>& vals) {
  std::unordered_map<const UOpNode*, ConstVal> memo;
  for (auto* n : root.topo_nodes()) {
    UOp u(n);
    ConstVal r;
    if (auto it = vals.find(u); it != vals.end()) r = it->second;
    else if (n->op == Ops::CONST) r = n->arg.cval();
    else if (n->op == Ops::AFTER) r = memo.at(n->srcs()[0].get());
    else if (n->op == Ops::CAST) r = truncate(n->dtype, memo.at(n->srcs()[0].get()));
    else if (GroupOp::ALU.has(n->op)) {
      std::vector<ConstVal> ops;
      for (uint32_t i = 0; i < n->nsrc; i++) ops.push_back(memo.at(n->srcs()[i].get()));
      r = exec_alu(n->op, n->dtype, ops);
    } else if (n->op == Ops::STACK && n->nsrc == 0) r = ConstVal(int64_t(0));
    else if (n->op == Ops::BUFFER || n->op == Ops::PARAM || n->op == Ops::RANGE || n->op == Ops::SPECIAL)
      throw Error("eval_uop: no value given for " + u.render(false));
    else throw Error("eval_uop: cannot evaluate " + std::string(op_name(n->op)));
    memo[n] = r;
  }
  return memo.at(root.get());
}

}  // namespace tg
