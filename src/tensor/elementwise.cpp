// Elementwise, reduce and linear-algebra ops on Tensor (tinygrad's mixin/elementwise.py, dtype.py, reduce.py and the
// matching parts of op.py), each built from the same primitives in the same order, so the graphs equal tinygrad's.
#include <cmath>
#include <numbers>

#include "tensor/sint_impl.h"
#include "tensor/tensor_impl.h"
#include "uop/movement.h"

namespace tg {

namespace {
std::string dt_name(DType d) { return std::string(d.name()); }
}  // namespace

// ***** 1. binary ops and comparisons *****

Tensor Tensor::add(const Tensor& x, bool reverse) const { return binop(*this, Ops::ADD, x, reverse); }
Tensor Tensor::sub(const Tensor& x, bool reverse) const {
  auto [a, b] = broadcasted(*this, x, reverse);
  return alu(a, Ops::ADD, {-b});  // alu, not +: a second promotion would cast -b
}
Tensor Tensor::mul(const Tensor& x, bool reverse) const { return binop(*this, Ops::MUL, x, reverse); }
Tensor Tensor::div(const Tensor& x, bool reverse) const { return div(x, "", reverse); }
Tensor Tensor::div(const Tensor& x, const std::string& rounding_mode, bool reverse) const {
  if (!rounding_mode.empty() && rounding_mode != "trunc" && rounding_mode != "floor")
    throw Error("div: rounding_mode '" + rounding_mode + "' is not supported (use \"trunc\" or \"floor\")");
  auto [a, b] = broadcasted(*this, x, reverse);
  if (a.dtype().is_int() && b.dtype().is_int()) {
    if (rounding_mode == "trunc") return alu(a, Ops::CDIV, {b});
    if (rounding_mode == "floor") return alu(a, Ops::FLOORDIV, {b});
  }
  if (a.dtype().is_int() || a.dtype().is_bool()) a = a.cast(dtypes::default_float);
  Tensor d = alu(a, Ops::MUL, {b.reciprocal()});
  if (rounding_mode == "trunc") return d.trunc();
  if (rounding_mode == "floor") return d.floor();
  return d;
}
Tensor Tensor::idiv(const Tensor& x, bool reverse) const { return div(x, "floor", reverse); }
Tensor Tensor::mod(const Tensor& x, bool reverse) const {
  auto [a, b] = broadcasted(*this, x, reverse);
  if (a.dtype().is_int() && b.dtype().is_int()) return alu(a, Ops::FLOORMOD, {b});
  return a - a.div(b, "floor") * b;
}
Tensor Tensor::fmod(const Tensor& x) const {
  auto [a, b] = broadcasted(*this, x);
  if (a.dtype().is_int() && b.dtype().is_int()) return alu(a, Ops::CMOD, {b});
  return a - a.div(b, "trunc") * b;
}
Tensor Tensor::pow(const Tensor& x, bool reverse) const {
  auto [base, exponent] = broadcasted(*this, x, reverse);
  return alu(base, Ops::POW, {exponent});
}
Tensor Tensor::maximum(const Tensor& x) const { return binop(*this, Ops::MAX, x); }
Tensor Tensor::minimum(const Tensor& x) const {
  auto [t, y] = broadcasted(*this, x);
  DType dt = least_upper_dtype({t.dtype(), y.dtype()});
  if (dt.is_float()) return -alu(-t, Ops::MAX, {-y});
  // ints: min(a, b) = max(a^k, b^k)^k with k = min+max of the dtype (an all-ones pattern for signed types)
  // (bool: k is True, so the xor is a logical not and the result stays bool)
  Tensor k = dt.is_bool() ? lit(ConstVal(true)) : lit(ConstVal(int64_t(uint64_t(dt.min().as_int()) + uint64_t(dt.max().as_int()))));
  return alu(t ^ k, Ops::MAX, {y ^ k}) ^ k;
}
Tensor Tensor::where(const Tensor& x, const Tensor& y) const {
  auto [a, b] = broadcasted(x, y);
  return alu(*this, Ops::WHERE, {a, b});
}
Tensor Tensor::copysign(const Tensor& other) const {
  auto [a, b] = broadcasted(*this, other);
  Tensor mag = a.abs();
  return ((b < 0) | (b.reciprocal() < 0)).where(-mag, mag);  // 1/-0.0 < 0 catches the negative zero
}
Tensor Tensor::logaddexp(const Tensor& other) const {
  auto [a, b] = broadcasted(*this, other);
  Tensor m = a.maximum(b);
  return ((a - m).exp() + (b - m).exp()).log() + m;
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const {
  if (dtype() != dtypes::uint8) return *this + (end - *this) * weight;
  // uint8 images: the weight in 7-bit fixed point, the difference (as int8) times it, rounded
  constexpr int64_t W_PREC = 7;
  Tensor w_i = (weight * (1 << W_PREC) + 0.5).cast(dtypes::int16);
  return (*this + (((end - *this).cast(dtypes::int8) * w_i + (1 << (W_PREC - 1))).cast(dtypes::uint16) >> W_PREC)).cast(dtypes::uint8);
}
Tensor Tensor::lerp(const Tensor& end, double weight) const { return *this + (end - *this) * weight; }
Tensor Tensor::lt(const Tensor& x) const { return binop(*this, Ops::CMPLT, x); }
Tensor Tensor::gt(const Tensor& x) const { return binop(*this, Ops::CMPLT, x, true); }
Tensor Tensor::ge(const Tensor& x) const { return lt(x).logical_not(); }
Tensor Tensor::le(const Tensor& x) const { return gt(x).logical_not(); }
Tensor Tensor::ne(const Tensor& x) const { return binop(*this, Ops::CMPNE, x); }
Tensor Tensor::eq(const Tensor& x) const { return ne(x).logical_not(); }
Tensor Tensor::bitwise_and(const Tensor& x, bool reverse) const { return binop(*this, Ops::AND, x, reverse); }
Tensor Tensor::bitwise_or(const Tensor& x, bool reverse) const { return binop(*this, Ops::OR, x, reverse); }
Tensor Tensor::bitwise_xor(const Tensor& x, bool reverse) const { return binop(*this, Ops::XOR, x, reverse); }
Tensor Tensor::lshift(const Tensor& x, bool reverse) const { return binop(*this, Ops::SHL, x, reverse); }
Tensor Tensor::rshift(const Tensor& x, bool reverse) const { return binop(*this, Ops::SHR, x, reverse); }

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return a.mod(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return a.eq(b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return a.ne(b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return a.bitwise_and(b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return a.bitwise_or(b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return a.bitwise_xor(b); }
Tensor operator<<(const Tensor& a, const Tensor& b) { return a.lshift(b); }
Tensor operator>>(const Tensor& a, const Tensor& b) { return a.rshift(b); }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator~(const Tensor& a) { return a.bitwise_not(); }

// ***** 2. unary ops *****

Tensor Tensor::logical_not() const { return cast(dtypes::bool_).ne(true); }
Tensor Tensor::neg() const { return dtype().is_bool() ? logical_not() : *this * -1; }
Tensor Tensor::bitwise_not() const {
  if (dtype().is_bool()) return logical_not();
  if (!dtype().is_int()) throw Error("bitwise_not: needs an int or bool dtype, got " + dt_name(dtype()));
  // uint64's max does not fit an int64 literal; -1 has the same bits
  return dtype().is_unsigned() && dtype() != dtypes::uint64 ? *this ^ lit(dtype().max()) : *this ^ -1;
}
Tensor Tensor::reciprocal() const { return alu(*this, Ops::RECIPROCAL); }
Tensor Tensor::sqrt() const { return alu(*this, Ops::SQRT); }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::exp2() const { return alu(*this, Ops::EXP2); }
Tensor Tensor::log2() const { return alu(*this, Ops::LOG2); }
Tensor Tensor::sin() const { return alu(*this, Ops::SIN); }
Tensor Tensor::trunc() const { return alu(*this, Ops::TRUNC); }
Tensor Tensor::exp() const {
  Tensor s = cast(least_upper_float(dtype()));
  return s.cast(least_upper_dtype({s.dtype(), dtypes::float32})).mul(1 / std::log(2.0)).exp2().cast(s.dtype());
}
Tensor Tensor::log() const { return log2() * std::log(2.0); }
Tensor Tensor::log10() const { return log2() * std::log10(2.0); }
Tensor Tensor::cos() const {
  Tensor s = cast(least_upper_float(dtype()));
  return s.cast(least_upper_dtype({s.dtype(), dtypes::float32})).sub(std::numbers::pi / 2, true).sin().cast(s.dtype());
}
Tensor Tensor::tan() const { return sin() / cos(); }
Tensor Tensor::sign() const {
  return ne(0).where(lt(0).where(tg::const_like(*this, int64_t(-1)), tg::const_like(*this, int64_t(1))), tg::const_like(*this, int64_t(0)));
}
Tensor Tensor::abs() const { return *this * sign(); }
Tensor Tensor::floor() const {
  Tensor b = trunc();
  return lt(b).where(b - 1, b);
}
Tensor Tensor::ceil() const {
  Tensor b = trunc();
  return gt(b).where(b + 1, b);
}
Tensor Tensor::round() const {
  Tensor b = trunc() / 2.0;
  return (*this > 0).eq(b.trunc().eq(b)).where((*this - 0.5).ceil(), (*this + 0.5).floor());
}
Tensor Tensor::relu() const { return gt(0).where(*this, 0); }
Tensor Tensor::sigmoid() const { return (*this * (-1 / std::log(2.0))).exp2().add(1, true).reciprocal(); }
Tensor Tensor::tanh() const { return mul(2.0, true).sigmoid().mul(2.0, true) - 1.0; }
Tensor Tensor::gelu(const std::string& approximate) const {
  if (approximate == "none") return *this * 0.5 * div(std::sqrt(2.0)).erf().add(1.0, true);
  if (approximate != "tanh") throw Error("gelu: approximate='" + approximate + "' is not supported (use \"tanh\" or \"none\")");
  Tensor inner = add(pow(3).mul(0.044715, true)).mul(std::sqrt(2 / std::numbers::pi), true).tanh().add(1, true);
  return mul(0.5, true) * inner;
}
Tensor Tensor::silu() const { return *this * sigmoid(); }
Tensor Tensor::square() const { return *this * *this; }
Tensor Tensor::clamp(std::optional<Tensor> min_, std::optional<Tensor> max_) const {
  if (!min_ && !max_) throw Error("clamp: at least one of min_ or max_ must be given");
  Tensor ret = min_ ? lt(*min_).where(*min_, *this) : *this;
  return max_ ? ret.gt(*max_).where(*max_, ret) : ret;
}
Tensor Tensor::cast(DType dt) const {
  if (dt == dtypes::void_) throw Error("cast: cannot cast " + dt_name(dtype()) + " " + shape_str() + " to void");
  return dtype() == dt ? *this : alu(*this, Ops::CAST, {}, Arg(dt));
}
Tensor Tensor::bitcast(DType dt) const {
  if (dtype().is_weak() || dt.is_weak()) throw Error("bitcast: needs concrete dtypes, got " + dt_name(dtype()) + " -> " + dt_name(dt));
  return dtype() == dt ? *this : alu(*this, Ops::BITCAST, {}, Arg(dt));
}

// ***** 3. reduce *****

Tensor Tensor::sum(Axis axis, bool keepdim, std::optional<DType> dt) const {
  Tensor ret = reduce_(cast(dt ? *dt : sum_acc_dtype(dtype())), Ops::ADD, axis, keepdim);
  return !dt && (dtype() == dtypes::float16 || dtype() == dtypes::bfloat16 || dtype().is_fp8()) ? ret.cast(dtype()) : ret;
}
Tensor Tensor::prod(Axis axis, bool keepdim, std::optional<DType> dt) const { return reduce_(cast(dt.value_or(dtype())), Ops::MUL, axis, keepdim); }
Tensor Tensor::max(Axis axis, bool keepdim) const { return reduce_(*this, Ops::MAX, axis, keepdim); }
namespace {
Tensor inverse(const Tensor& t) { return t.is_floating_point() ? -t : ~t; }
}  // namespace
Tensor Tensor::min(Axis axis, bool keepdim) const { return inverse(inverse(*this).max(axis, keepdim)); }
Tensor Tensor::any(Axis axis, bool keepdim) const { return bool_().max(axis, keepdim); }
Tensor Tensor::all(Axis axis, bool keepdim) const { return bool_().prod(axis, keepdim); }
namespace {
// the number of elements a reduce over `axis` combines: the product of the reduced dims that are not 1
sint reduced_count(const Tensor& t, const Axis& axis, const char* op) {
  sint n = 1;
  if (t.ndim() == 0) return n;
  std::vector<bool> red(size_t(t.ndim()), !axis.axes);
  if (axis.axes) for (auto a : *axis.axes) red[size_t(resolve_dim(t, a, false, op))] = true;
  SymShape s = t.sym_shape();
  for (int64_t i = 0; i < t.ndim(); i++) if (red[size_t(i)] && s[size_t(i)] != sint(1)) n = n * s[size_t(i)];
  return n;
}
// a count as a tensor value: an int literal, or the symbolic expression (its Variables become kernel arguments)
Tensor count_tensor(const sint& n) { return n.is_int() ? Tensor(n.as_int()) : wrap(to_uop(n)); }
}  // namespace
Tensor Tensor::mean(Axis axis, bool keepdim) const {
  DType out = dtype().is_float() ? dtype() : dtypes::float32;
  Tensor numerator = cast(sum_acc_dtype(dtype())).sum(axis, keepdim);
  return numerator.div(count_tensor(reduced_count(*this, axis, "mean"))).cast(out);
}
Tensor Tensor::var(Axis axis, bool keepdim, int64_t correction) const {
  DType out = dtype().is_float() ? dtype() : dtypes::float32;
  Tensor squares = (*this - mean(axis, true)).square();
  Tensor numerator = squares.cast(sum_acc_dtype(dtype())).sum(axis, keepdim);
  return numerator.div(count_tensor(smax(reduced_count(*this, axis, "var") - correction, 0))).cast(out);
}
Tensor Tensor::std(Axis axis, bool keepdim, int64_t correction) const { return var(axis, keepdim, correction).sqrt(); }
std::pair<Tensor, Tensor> Tensor::var_mean(Axis axis, bool keepdim, int64_t correction) const {
  return {var(axis, keepdim, correction), mean(axis, keepdim)};
}
std::pair<Tensor, Tensor> Tensor::std_mean(Axis axis, bool keepdim, int64_t correction) const {
  return {std(axis, keepdim, correction), mean(axis, keepdim)};
}
Tensor Tensor::argmax(std::optional<int64_t> axis_in, bool keepdim) const {
  if (!axis_in) return flatten().argmax(0);
  int64_t axis = resolve_dim(*this, *axis_in, false, "argmax"), n = shape()[size_t(axis)];
  Tensor m = eq(max(axis, true));
  Shape rs{n};
  rs.resize(size_t(ndim() - axis), 1);
  Tensor idx = m * Tensor::arange(n, 0, -1).reshape(rs);
  return idx.max(axis, keepdim).sub(n, true).cast(dtypes::int32);
}
Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const { return inverse(*this).argmax(axis, keepdim); }

namespace {
struct SoftmaxParts { Tensor m, e, ss; };
SoftmaxParts softmax_parts(const Tensor& self, int64_t axis, std::optional<DType> dtype) {
  Tensor m = self - self.max(axis, true).detach();
  if (dtype) m = m.cast(*dtype);
  Tensor e = m.exp();
  return {m, e, e.sum(axis, true)};
}
}  // namespace
Tensor Tensor::softmax(int64_t axis, std::optional<DType> dtype) const {
  auto p = softmax_parts(*this, axis, dtype);
  return p.e * p.ss.reciprocal();
}
Tensor Tensor::log_softmax(int64_t axis, std::optional<DType> dtype) const {
  auto p = softmax_parts(*this, axis, dtype);
  return p.m - p.ss.log();
}
Tensor Tensor::softmin(int64_t axis, std::optional<DType> dtype) const { return (-*this).softmax(axis, dtype); }
Tensor Tensor::logsumexp(Axis axis, bool keepdim) const {
  Tensor m = max(axis, true).detach();
  Tensor ms = m;
  if (!keepdim) {
    if (!axis.axes) ms = m.squeeze();
    else {
      std::vector<int64_t> ax;
      for (auto a : *axis.axes) ax.push_back(resolve_dim(*this, a, false, "logsumexp"));
      std::sort(ax.rbegin(), ax.rend());
      for (auto a : ax) ms = ms.squeeze(a);
    }
  }
  return (*this - m).exp().sum(axis, keepdim).log() + ms;
}

// ***** 4. linear algebra *****

Tensor Tensor::dot(const Tensor& w_in, std::optional<DType> dt) const {
  int64_t dx = ndim(), dw = w_in.ndim();
  if (dx == 0 || dw == 0) throw Error("dot: both tensors need to be at least 1D, got " + shape_str() + " and " + w_in.shape_str());
  int64_t axis_w = -std::min<int64_t>(dw, 2);
  const SymShape xs = sym_shape(), ws = w_in.sym_shape();
  if (xs.back() != ws[size_t(dw + axis_w)])
    throw Error("dot: cannot dot " + shape_str() + ":" + dt_name(dtype()) + " and " + w_in.shape_str() + ":" + dt_name(w_in.dtype()));
  int64_t ones = std::min({dx - 1, dw - 1, int64_t(1)});
  SymShape xr(xs.begin(), xs.end() - 1), wr(ws.begin(), ws.end() - std::min<int64_t>(dw, 2));
  xr.insert(xr.end(), size_t(ones), 1);
  xr.push_back(xs.back());
  wr.insert(wr.end(), size_t(ones), 1);
  wr.insert(wr.end(), ws.end() + axis_w, ws.end());
  // an accumulation dtype equal to both inputs' (attention's float32 q @ k^T) changes nothing: packed as without one
  if ((!dt || (*dt == dtype() && *dt == w_in.dtype())) && dx >= 2 && dw >= 2)
    if (std::optional<Tensor> r = packed_dot(*this, w_in)) return *r;
  Tensor x = reshape(xr), w = w_in.reshape(wr).transpose(-1, axis_w);
  return (x * w).sum(-1, false, dt).cast(dt ? *dt : least_upper_dtype({x.dtype(), w.dtype()}));
}
Tensor Tensor::matmul(const Tensor& x, bool reverse, std::optional<DType> dt) const { return reverse ? x.dot(*this, dt) : dot(x, dt); }
Tensor Tensor::linear(const Tensor& weight, std::optional<Tensor> bias, std::optional<DType> dt) const {
  if (dt) return cast(*dt).linear(weight.cast(*dt), bias ? std::optional<Tensor>(bias->cast(*dt)) : std::nullopt);
  Tensor x = weight.ndim() == 1 ? mul(weight) : dot(weight);
  return bias ? x.add(*bias) : x;
}
Tensor Tensor::layernorm(Axis axis, double eps) const {
  Tensor y = *this - mean(axis, true);
  return y.mul((y * y).mean(axis, true).add(eps).rsqrt());
}

}  // namespace tg
