// Tensor creation (tinygrad's mixin/creation.py, arange/eye of op.py) and random numbers (mixin/rand.py with
// Tensor._next_counter): the threefry counter generator built as the same graph.
#include <chrono>
#include <cmath>
#include <numbers>
#include <map>

#include "engine/realize.h"
#include "schedule/multi.h"
#include "runtime/buffer.h"
#include "tensor/sint_impl.h"
#include "tensor/tensor_impl.h"
#include "tg/device.h"
#include "uop/movement.h"
#include "util/sha256.h"

namespace tg {

namespace {
std::string dt_name(DType d) { return std::string(d.name()); }
int64_t numel_of(const Shape& s) {
  int64_t r = 1;
  for (auto x : s) r *= x;
  return r;
}
int64_t ceildiv(int64_t a, int64_t b) { return (a + b - 1) / b; }  // non-negative operands only
std::optional<std::string> opt_dev(const std::string& d) { return d.empty() ? std::nullopt : std::optional<std::string>(d); }
// a replicated multi-device tensor made on each device of the tuple by f
template <class F> Tensor per_device(const std::string& tuple, F f) {
  std::vector<std::string> devs = parse_device_tuple(tuple);
  std::vector<UOp> shards;
  for (auto& d : devs) shards.push_back(uop_of(f(canonicalize_device(d))));
  return wrap(make_multi(shards, std::nullopt, devs));
}
DType from_py(ConstVal v) { return v.is_bool() ? dtypes::bool_ : v.is_float() ? dtypes::weakfloat : dtypes::weakint; }
void check_shape(const char* op, const Shape& s) {
  for (auto x : s) if (x < 0) throw Error(std::string(op) + ": invalid shape " + shape_str(s) + " (negative dimension)");
}
}  // namespace

Tensor full_const(const Shape& shape, ConstVal v, DType dt) {
  return wrap(UOp::const_(v, dt)).reshape(Shape(shape.size(), 1)).expand(shape);
}

// ***** 1. creation *****

Tensor Tensor::empty(const SymShape& sshape, std::optional<DType> dtype, const std::string& device) {
  if (is_device_tuple(device)) return per_device(device, [&](const std::string& d) { return empty(sshape, dtype, d); });
  if (auto shape = sshape.ints()) {
    check_shape("empty", *shape);
    return wrap(UOp::empty(*shape, dtype.value_or(dtypes::default_float), device));
  }
  return wrap(UOp::empty_sym(to_sshape(sshape), dtype.value_or(dtypes::default_float), canonicalize_device(device)));
}

Tensor Tensor::full(const Shape& shape, ConstVal fill_value, std::optional<DType> dtype, const std::string& device) {
  check_shape("full", shape);
  if (is_device_tuple(device)) return per_device(device, [&](const std::string& d) { return full(shape, fill_value, dtype, d); });
  Tensor val = full_const(shape, fill_value, dtype ? *dtype : from_py(fill_value));
  Tensor ret = val.empty_like(dtype, device);
  const UOp& r = uop_of(ret);
  return wrap(r.after({r.store(uop_of(val))}));
}
Tensor Tensor::zeros(const Shape& shape, std::optional<DType> dtype, const std::string& device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, std::optional<DType> dtype, const std::string& device) { return full(shape, 1.0, dtype, device); }
Tensor Tensor::full_like(ConstVal v, std::optional<DType> dtype) const { return full(shape(), v, dtype.value_or(this->dtype()), device().value_or("")); }
Tensor Tensor::zeros_like(std::optional<DType> dtype) const { return full_like(0, dtype); }
Tensor Tensor::ones_like(std::optional<DType> dtype) const { return full_like(1, dtype); }
Tensor Tensor::empty_like(std::optional<DType> dtype, const std::string& device) const {
  return wrap(uop_of(*this).empty_like(dtype, opt_dev(device)));
}

Tensor Tensor::const_like(ConstVal v, std::optional<DType> dtype) const { return tg::const_like(*this, v, dtype); }

Tensor Tensor::linspace(ConstVal start, ConstVal stop, int64_t steps, std::optional<DType> dtype) {
  if (steps < 0) throw Error("linspace: the number of steps must be non-negative, got " + std::to_string(steps));
  DType dt = dtype.value_or(dtypes::default_float);
  if (dt.is_bool()) throw Error("linspace: bool dtype is not supported");
  if (steps == 1) return full_const({1}, start, dt);
  double delta = (stop.as_double() - start.as_double()) / double(steps - 1);
  return (arange(steps, dtypes::default_float) * delta + lit(start)).cast(dt);
}

// tinygrad's full of Invalid; a STORE of Invalid is not lowered here yet, so it is the anonymous buffer empty() makes
Tensor Tensor::invalids(const Shape& shape, std::optional<DType> dtype, const std::string& device) {
  check_shape("invalids", shape);
  return empty(shape, dtype, device);
}

Tensor Tensor::from_blob(void* ptr, const Shape& shape, DType dtype, const std::string& device) {
  check_shape("from_blob", shape);
  if (dtype.is_weak()) throw Error("from_blob: cannot create storage for weak dtype " + dt_name(dtype));
  if (!ptr && numel_of(shape) > 0) throw Error("from_blob: null pointer for shape " + tg::shape_str(shape));
  Tensor r = empty(shape, dtype, device);
  if (numel_of(shape) > 0) buffer_of(uop_of(r).base()).use_external(ptr);
  return r;
}

Tensor Tensor::arange(ConstVal stop, std::optional<DType> dtype) { return arange(0, stop, 1, dtype); }
Tensor Tensor::arange(ConstVal start, ConstVal stop, ConstVal step, std::optional<DType> dtype) {
  bool fl = start.is_float() || stop.is_float() || step.is_float();
  double a = start.as_double(), b = stop.as_double(), st = step.as_double();
  if (st == 0) throw Error("arange: step must not be 0");
  // bounds of the values produced, for the dtype check
  ConstVal lo = st > 0 ? start : fl ? ConstVal(b - st) : ConstVal(stop.as_int() - step.as_int());
  ConstVal hi = st > 0 ? (fl ? ConstVal(b - st) : ConstVal(stop.as_int() - step.as_int())) : start;
  DType dt;
  if (dtype) dt = *dtype;
  else {
    dt = fl ? dtypes::default_float : dtypes::default_int;
    if (!fl && (lo < dt.min() || dt.max() < hi)) dt = dtypes::int64;
  }
  if (lo < dt.min() || dt.max() < hi)
    throw Error("arange: [" + start.str() + ", " + stop.str() + ") is not representable in dtype " + dt_name(dt));
  int64_t n;
  if (fl) n = int64_t(-std::floor((b - a) / -st));
  else {
    int64_t d = stop.as_int() - start.as_int(), s = -step.as_int();
    n = -(d / s - (d % s != 0 && (d < 0) != (s < 0) ? 1 : 0));  // Python's -(d // -step)
  }
  if (n <= 0) return full_const({0}, 0, dt);
  ConstVal off = fl ? ConstVal(a - st) : ConstVal(start.as_int() - step.as_int());
  return (cumalu(full_const({n}, step, dt), 0, Ops::ADD) + lit(off)).cast(dt);
}

Tensor Tensor::eye(int64_t n, std::optional<int64_t> m, std::optional<DType> dtype) {
  int64_t m_ = m.value_or(n);
  if (n < 0 || m_ < 0) throw Error("eye: cannot have negative n=" + std::to_string(n) + ", m=" + std::to_string(m_));
  return arange(n).unsqueeze(-1).eq(arange(m_)).cast(dtype.value_or(dtypes::default_float));
}

namespace {
// arange(n) where n may be symbolic: the first n of arange(n's largest value), the same values
Tensor arange_to(const sint& n) { return n.is_int() ? Tensor::arange(n.as_int()) : Tensor::arange(n.vmax()).shrink({{0, n}}); }
// tinygrad's _tri: true where column - row >= diagonal (dims and diagonal may be symbolic)
Tensor tri(const sint& r, const sint& c, const sint& diagonal) {
  return arange_to(r).unsqueeze(-1) + (diagonal.is_int() ? Tensor(diagonal.as_int()) : wrap(to_uop(diagonal))) <= arange_to(c);
}
void check_matrix(const Tensor& t, const char* op) {
  if (t.ndim() < 2) throw Error(std::string(op) + ": needs at least 2 dims (the last two are the matrix), got shape " + t.shape_str());
}
}  // namespace
Tensor Tensor::triu(const sint& diagonal) const {
  check_matrix(*this, "triu");
  SymShape s = sym_shape();
  return tri(s[s.size() - 2], s.back(), diagonal).where(*this, tg::const_like(*this, 0));
}
Tensor Tensor::tril(const sint& diagonal) const {
  check_matrix(*this, "tril");
  SymShape s = sym_shape();
  return tri(s[s.size() - 2], s.back(), diagonal + 1).where(tg::const_like(*this, 0), *this);
}

// ***** 2. random: threefry on a per-device (key, counter) state *****

namespace {
struct RngState {
  uint64_t seed = uint64_t(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  std::map<std::string, Tensor> device_seeds, counters;
};
RngState& rng() {
  static RngState* s = new RngState();  // never destroyed: it holds tensors, which must not outlive the UOp tables
  return *s;
}

std::pair<Tensor, Tensor> next_counter(const std::string& device, int64_t num) {
  RngState& st = rng();
  if (!st.device_seeds.count(device)) {
    uint8_t n4[4] = {0, 0, 0, uint8_t(st.device_seeds.size())};
    n4[2] = uint8_t(st.device_seeds.size() >> 8);
    auto h = sha256(std::string_view(reinterpret_cast<const char*>(n4), 4));
    uint32_t key0 = uint32_t(h[28]) << 24 | uint32_t(h[29]) << 16 | uint32_t(h[30]) << 8 | uint32_t(h[31]);
    st.device_seeds.emplace(device, Tensor::from_vector<uint32_t>({key0, uint32_t(st.seed)}, {2}, std::nullopt, device));
    st.counters.emplace(device, Tensor::from_vector<uint32_t>({0, 0}, {2}, std::nullopt, device));
  }
  Tensor counter = st.counters.at(device);
  int64_t lo32 = num & 0xffffffff, hi32 = num >> 32;
  Tensor new_low = counter.slice({{0, 1}}) + lo32;
  Tensor new_high = counter.slice({{1, 2}}) + hi32 + (new_low < counter[0]);
  counter.assign(new_low.cat(new_high));
  Tensor low = counter.slice({{0, 1}}) - lo32;
  Tensor high = counter.slice({{1, 2}}) - hi32 - (counter[0] < lo32);
  return {st.device_seeds.at(device), low.cat(high)};
}

Tensor threefry_random_bits(const Tensor& key, const Tensor& counts0, const Tensor& counts1) {
  Tensor x = (counts1.cast(dtypes::uint64) << 32) | counts0.cast(dtypes::uint64);
  x = alu(x, Ops::THREEFRY, {(key[1].cast(dtypes::uint64) << 32) | key[0].cast(dtypes::uint64)});
  return x.cast(dtypes::uint32).cat((x >> 32).cast(dtypes::uint32));
}

}  // namespace

Tensor Tensor::random_bits(const Tensor& key, const Tensor& counter, int64_t num) {
  for (const Tensor* t : {&key, &counter})
    if (t->shape() != Shape{2} || t->dtype() != dtypes::uint32)
      throw Error("random_bits: key and counter must be (2,) uint32, got " + t->shape_str() + " " + dt_name(t->dtype()));
  if (num < 0) throw Error("random_bits: num must be non-negative, got " + std::to_string(num));
  Tensor low = counter.slice({{0, 1}}), high = counter.slice({{1, 2}});
  std::vector<Tensor> bits;
  constexpr int64_t U32MAX = 0xffffffff;
  for (int64_t i = 0; i < num; i += U32MAX) {
    int64_t chunk = std::min(num - i, U32MAX);
    Tensor c_low = low + (i & 0xffffffff);
    Tensor c_high = high + (i >> 32) + (c_low < low);
    Tensor new_key = threefry_random_bits(key, c_low, c_high);
    Tensor counts0 = Tensor::arange(ceildiv(chunk, 2), dtypes::uint32);
    Tensor counts1 = counts0 + ceildiv(chunk, 2);
    bits.push_back(threefry_random_bits(new_key, counts0, counts1).slice({{std::nullopt, chunk}}));
  }
  if (bits.empty()) return counter.slice({{0, 0}});
  return Tensor::cat(bits);
}

namespace {

Tensor bits_to_rand(const Tensor& bits, const Shape& shape, DType dt) {
  int nmant = dt.is_fp8() ? (dt == dtypes::fp8e4m3 || dt == dtypes::fp8e4m3fnuz ? 3 : 2)
              : dt == dtypes::float16 ? 10 : dt == dtypes::bfloat16 ? 7 : dt == dtypes::float32 ? 23 : 52;
  DType udt = dt.itemsize() == 1 ? dtypes::uint8 : dt.itemsize() == 2 ? dtypes::uint16 : dt.itemsize() == 4 ? dtypes::uint32 : dtypes::uint64;
  int64_t one_bits = dt.is_fp8() ? float_to_fp8(1.0, dt)
                     : dt == dtypes::float16 ? 0x3C00 : dt == dtypes::bfloat16 ? 0x3F80 : dt == dtypes::float32 ? 0x3F800000 : 0x3FF0000000000000;
  return bits.bitcast(udt).rshift(dt.bitsize() - nmant).bitwise_or(one_bits).bitcast(dt).slice({{std::nullopt, numel_of(shape)}}).sub(1).reshape(shape);
}
}  // namespace

void set_rng_state(const std::string& device, const Tensor& key, const Tensor& counter) {
  rng().device_seeds.insert_or_assign(device, key);
  rng().counters.insert_or_assign(device, counter);
}

void Tensor::manual_seed(uint64_t seed) {
  RngState& st = rng();
  st.seed = seed;
  st.device_seeds.clear();
  st.counters.clear();
}

Tensor Tensor::rand(const Shape& shape, std::optional<DType> dtype, const std::string& device) {
  DType dt = dtype.value_or(dtypes::default_float);
  if (!dt.is_float() || dt.is_weak()) throw Error("rand: only concrete float dtypes are supported, got " + dt_name(dt));
  check_shape("rand", shape);
  std::string dev = canonicalize_device(device);
  int64_t num = ceildiv(numel_of(shape) * dt.itemsize(), 4);
  auto [key, counter] = next_counter(dev, num);
  return bits_to_rand(random_bits(key, counter, num), shape, dt).contiguous();
}

Tensor Tensor::rand_like(std::optional<DType> dtype) const { return rand(shape(), dtype.value_or(this->dtype()), device().value_or("")); }

Tensor Tensor::randn_like(std::optional<DType> dtype) const {
  DType dt = dtype.value_or(this->dtype());
  if (dt.is_weak()) throw Error("randn_like: needs an explicit dtype for a " + dt_name(dt) + " tensor");
  Tensor src = stack(*this).rand_like(dtypes::float32);
  return src[0].mul(2 * std::numbers::pi).cos().mul(src[1].sub(1, true).log().mul(-2).sqrt()).cast(dt);
}

Tensor Tensor::randn(const Shape& shape, std::optional<DType> dtype, const std::string& device) {
  return empty(shape, std::nullopt, device).randn_like(dtype);
}

Tensor Tensor::uniform(const Shape& shape, double low, double high, std::optional<DType> dtype, const std::string& device) {
  check_shape("uniform", shape);
  if (low >= high) throw Error("uniform: requires low < high, got low=" + std::to_string(low) + ", high=" + std::to_string(high));
  return (rand(shape, std::nullopt, device).mul(high - low, true)).cast(dtype.value_or(dtypes::default_float)) + low;
}

Tensor Tensor::normal(const Shape& shape, double mean, double std, std::optional<DType> dtype, const std::string& device) {
  if (!(std >= 0)) throw Error("normal: requires std >= 0, got std=" + std::to_string(std));
  return randn(shape, dtype, device).mul(std, true) + mean;
}

Tensor Tensor::kaiming_normal(const Shape& shape, double a, std::optional<DType> dtype, const std::string& device) {
  if (shape.empty()) throw Error("kaiming_normal: needs at least one dim (the fan-in is prod(shape[1:]))");
  int64_t fan_in = numel_of(Shape(shape.begin() + 1, shape.end()));
  if (fan_in <= 0) throw Error("kaiming_normal: the fan-in prod(shape[1:]) of " + tg::shape_str(shape) + " is not positive");
  return normal(shape, 0.0, std::sqrt(2.0 / (1 + a * a) / double(fan_in)), dtype, device);
}

Tensor Tensor::randperm(int64_t n, DType dtype, const std::string& device) {
  if (n < 0) throw Error("randperm: n must be non-negative, got " + std::to_string(n));
  if (!dtype.is_int()) throw Error("randperm: dtype must be int, got " + dt_name(dtype));
  return rand({n}, std::nullopt, device).argsort().cast(dtype);
}

Tensor Tensor::multinomial(int64_t num_samples, bool replacement) const {
  if (ndim() < 1 || ndim() > 2) throw Error("multinomial: weights must be 1-D or 2-D, got shape " + shape_str());
  if (num_samples <= 0) throw Error("multinomial: num_samples must be positive, got " + std::to_string(num_samples));
  Tensor w = ndim() == 1 ? unsqueeze(0) : *this;
  if (!replacement && num_samples > w.shape()[1])
    throw Error("multinomial: " + std::to_string(num_samples) + " samples without replacement from " + std::to_string(w.shape()[1]) + " classes");
  Tensor idx;
  if (replacement || num_samples == 1) {
    Tensor cw = w.cumsum(1).float_(), cdf = cw / cw[{Slice{}, int64_t(-1)}].unsqueeze(1);
    Tensor u = rand({num_samples, cdf.shape()[0], 1}).to(device().value_or(""));
    idx = (u >= cdf).sum(2).permute({1, 0});
  } else {
    idx = (w.rand_like(dtypes::float32).log2() / w).topk(num_samples, 1).second;  // Efraimidis-Spirakis
  }
  return (ndim() == 1 ? idx.squeeze(0) : idx).cast(dtypes::int32);
}

Tensor Tensor::randint(const Shape& shape, int64_t low, int64_t high, DType dtype, const std::string& device) {
  if (!dtype.is_int()) throw Error("randint: dtype must be int, got " + dt_name(dtype));
  if (low >= high) throw Error("randint: requires low < high, got low=" + std::to_string(low) + ", high=" + std::to_string(high));
  check_shape("randint", shape);
  return (rand(shape, std::nullopt, device).mul(high - low, true)).cast(dtype) + low;
}

}  // namespace tg
