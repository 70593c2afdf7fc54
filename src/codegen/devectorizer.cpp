// The devectorizer of tinygrad's codegen/__init__.py: broadcasts, loads, devectorize, float ALU operands.
#include "codegen/devectorizer.h"

#include <algorithm>

#include "codegen/expander.h"
#include "renderer/cstyle.h"
#include "uop/movement.h"
#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
// a node rebuilt with new sources, its dtype derived again where the op derives one (tinygrad's replace(dtype=None))
UOp rebuild(const UOp& b, const std::vector<UOp>& src) {
  auto dt = dtype_from_uop(b.op(), src, b.arg());
  return UOp::make(b.op(), dt.value_or(b.dtype()), src, b.arg(), b.tag());
}
// shapes of codegen nodes: a SHRINK of a symbolic offset has the shape of its size (UOp::shape() wants const args)
const std::optional<Shape>& cg_shape(const UOp& u) {
  if (const auto* s = u.shape_if_valid()) return *s;
  return lin_max_shape(u);
}
UOp maybe_load(const UOp& u) {
  auto a = u.addrspace();
  return a && (*a == AddrSpace::GLOBAL || *a == AddrSpace::LOCAL || *a == AddrSpace::REG) ? u.load() : u;
}
UOp expand_broadcast(const UOp& x) {
  for (auto& u : x.src()) if (!cg_shape(u)) return UOp();
  if (std::all_of(x.src().begin(), x.src().end(), [&](const UOp& u) { return cg_shape(u) == cg_shape(x.src(0)); })) return UOp();
  std::vector<Shape> shapes;
  for (auto& u : x.src()) shapes.push_back(*cg_shape(u));
  Shape shape = broadcast_shape(shapes);
  std::vector<UOp> src;
  for (auto& u : x.src()) src.push_back(u.expand(shape));
  return x.replace({.src = src});
}
UOp do_devectorize(const UOp& b) {
  const auto& bs = cg_shape(b);
  if (!bs || bs->empty()) return UOp();
  for (auto& x : b.src()) if (!(cg_shape(x) == bs || x.base().is_invalid())) return UOp();
  std::vector<UOp> src, ic, ns;
  int64_t total = prod(*bs);
  std::vector<int64_t> idx(bs->size(), 0);
  for (int64_t k = 0; k < total; k++) {
    for (int64_t a = int64_t(bs->size()) - 1, rem = k; a >= 0; a--) idx[a] = rem % (*bs)[a], rem /= (*bs)[a];
    ic.clear(), ns.clear();
    for (auto i : idx) ic.push_back(cint(i));
    for (auto& x : b.src()) ns.push_back(x.base().is_invalid() ? x.base() : x.index(ic));
    src.push_back(rebuild(b, ns));
  }
  return b.op() == STORE ? UOp::group(src) : UOp::stack(src).reshape(*bs);
}
int64_t numel(const UOp& u) {
  int64_t n = 1;
  for (auto d : *cg_shape(u)) n *= d;
  return n;
}
// a WMMA whose sources' leading axes differ: one WMMA per element of the broadcast leading shape
UOp broadcast_and_devec_wmma(const UOp& b) {
  std::vector<Shape> shapes;
  for (auto& u : b.src()) shapes.push_back(Shape(cg_shape(u)->begin(), cg_shape(u)->end() - 1));
  if (std::all_of(shapes.begin(), shapes.end(), [&](const Shape& s) { return s == shapes[0]; })) return UOp();
  Shape shape = broadcast_shape(shapes);
  std::vector<UOp> expanded, out;
  for (auto& u : b.src()) {
    Shape s = shape;
    s.push_back(cg_shape(u)->back());
    expanded.push_back(u.expand(s));
  }
  const Shape& bs = *cg_shape(b);
  Shape lead(bs.begin(), bs.end() - 1);
  std::vector<int64_t> idx(lead.size(), 0);
  for (int64_t k = 0, total = prod(lead); k < total; k++) {
    for (int64_t a = int64_t(lead.size()) - 1, rem = k; a >= 0; a--) idx[size_t(a)] = rem % lead[size_t(a)], rem /= lead[size_t(a)];
    std::vector<UOp> ic, ns;
    for (auto i : idx) ic.push_back(cint(i));
    for (auto& x : expanded) ns.push_back(x.index(ic));
    out.push_back(b.replace({.src = ns}));
  }
  return UOp::stack(out).reshape(bs);
}
// a WMMA's sources as STACKs of their lanes
UOp do_stack_wmma(const UOp& u) {
  if (std::all_of(u.src().begin(), u.src().end(), [](const UOp& x) { return x.op() == STACK || x.op() == WMMA; })) return UOp();
  std::vector<UOp> src;
  for (auto& b : u.src()) {
    if (b.op() == STACK) { src.push_back(b); continue; }
    std::vector<UOp> lanes;
    for (int64_t i = 0; i < numel(b); i++) lanes.push_back(b.index({cint(i)}));
    src.push_back(UOp::stack(lanes));
  }
  return u.replace({.src = src});
}
}  // namespace

const PatternMatcher& pm_expand_broadcast() {
  static const PatternMatcher pm = pm_wmma_add() + PatternMatcher{
      U(GroupOp::Binary | GroupOp::Ternary | OpSet{STORE}, {}, {}, {}, "x") >> [](M m) { return expand_broadcast(m["x"]); },
      U(WMMA, {}, {}, {}, "b") >> [](M m) { return broadcast_and_devec_wmma(m["b"]); },
  }.pure();
  return pm;
}

const PatternMatcher& pm_add_loads() {
  static const PatternMatcher pm = PatternMatcher{
      U(GroupOp::Elementwise | OpSet{REDUCE, WMMA, STACK}, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        if (x.op() == BITCAST && cg_shape(x) != cg_shape(x.src(0))) return UOp();
        std::vector<UOp> src;
        for (auto& s : x.src()) src.push_back(maybe_load(s));
        return x.replace({.src = src});
      },
      U(STORE, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        return x.replace({.src = cat({x.src(0), maybe_load(x.src(1))}, tail(x.src(), 2))});
      },
  }.pure();
  return pm;
}

const PatternMatcher& ew_devectorizer() {
  static const PatternMatcher pm = PatternMatcher{
      U(GroupOp::Elementwise, {}, {}, {}, "b") >> [](M m) { return do_devectorize(m["b"]); },
  }.pure();
  return pm;
}

const PatternMatcher& devectorizer2() {
  static const PatternMatcher pm = (mop_cleanup() + pm_mops() + PatternMatcher{
      U(GroupOp::Elementwise | OpSet{LOAD, STORE}, {}, {}, {}, "b") >> [](M m) { return do_devectorize(m["b"]); },
      U(INDEX, {}, {V("x")}) >> [](M m) { return m["x"]; },
      U(WMMA, {}, {}, {}, "u") >> [](M m) { return do_stack_wmma(m["u"]); },
      U(INDEX, {}, {U(OpSet{PARAM, BUFFER}, {}, {}, {}, "b"), U(STACK, {}, {}, {}, "s")}, {}, "x") >> [](M m) {
        std::vector<UOp> out;
        for (auto& u : m["s"].src()) out.push_back(m["x"].replace({.src = std::vector{m["b"], u}}));
        return UOp::stack(out);
      },
      U(INDEX, {}, {U(OpSet{PARAM, BUFFER}, {}, {}, {}, "b"), U(RESHAPE, {}, {}, {}, "s")}) >> [](M m) {
        return m["b"].index({m["s"].src(0)}).reshape(*cg_shape(m["s"]));
      },
      U(RESHAPE, dtypes::void_, {}, {}, "x") >> [](M m) { return m["x"].src(0); },
      U(RESHAPE, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        return x.marg().empty() && cg_shape(x.src(0)) == std::optional<Shape>(Shape{1}) ? x.src(0).index({cint(0)}) : UOp();
      },
      U(EXPAND, {}, {V("x"), U()}, {}, "out") >> [](M m) {
        const UOp &x = m["x"], &out = m["out"];
        auto os = cg_shape(out);
        int64_t n = 1;
        if (os) for (auto d : *os) n *= d;
        if (!(cg_shape(x) == std::optional<Shape>(Shape{}) && cg_shape(out) == std::optional<Shape>(Shape{n}))) return UOp();
        return UOp::stack(std::vector<UOp>(size_t(n), x));
      },
  }).pure();
  return pm;
}

// v where xs[i] is INDEX(v, i) for every i and v is a vector of xs.size() lanes, else a null UOp
UOp vector_of_lanes(const std::vector<UOp>& xs) {
  size_t n = xs.size();
  if (n == 0 || xs[0].op() != INDEX || xs[0].src().size() != 2) return UOp();
  UOp v = xs[0].src(0);
  if (cg_shape(v) != std::optional<Shape>(Shape{int64_t(n)})) return UOp();
  for (size_t i = 0; i < n; i++)
    if (xs[i].op() != INDEX || xs[i].src().size() != 2 || xs[i].src(0) != v || xs[i].src(1).op() != CONST ||
        !xs[i].src(1).val().is_int() || xs[i].src(1).val().i != int64_t(i))
      return UOp();
  return v;
}

// SIMD kernels (clang's vector types): a STACK of lanes computed alike is that op on vectors of its operands, and a
// STACK of a vector's lanes in order is the vector. The devectorizer leaves one scalar op per lane for clang's SLP
// vectorizer, which does well on a tile's broadcasts but loses a matrix-vector product's lanes (a float16 weight row
// came out as 2-byte loads shifted together, an int8 one as byte inserts); built bottom-up from the stored accumulators,
// the lanes stay vectors from their loads to the FMA: one __builtin_convertvector and one FMA per row per step.
// Only ops that clang's vector types spell as C operators (no calls). Compares of 32-bit lanes are clang's int32 lane
// masks, and a WHERE of 32-bit lanes selects by such masks, one per lane (a causal mask's lanes, each its own position)
UOp vector_lanes(const UOp& s) {
  const auto& src = s.src();
  size_t n = src.size();
  const UOp& x0 = src[0];
  if (n < 2) return UOp();
  if (UOp v = vector_of_lanes({src.begin(), src.end()})) return v;
  if (!OpSet{ADD, SUB, MUL, NEG, AND, OR, XOR, SHL, SHR, CAST, BITCAST, WHERE, EXP2, RECIPROCAL, CMPLT, CMPNE, CMPEQ}.has(x0.op())) return UOp();
  // exp2 of float32 lanes: its decomposition is then vector arithmetic, compares into int32 lane masks and selects;
  // a reciprocal is 1 / x on the vector
  if ((x0.op() == EXP2 || x0.op() == RECIPROCAL) && x0.dtype() != dtypes::float32) return UOp();
  // ints and IEEE floats: clang has no bool vectors, and fp8/bfloat16 casts are bit ops the decompositions spell later
  auto plain = [](DType d) { return d.is_int() || d == dtypes::float16 || d == dtypes::float32 || d == dtypes::float64; };
  auto word = [](DType d) { return (d.is_int() || d == dtypes::float32) && d.itemsize() == 4; };
  auto mask = [&](const UOp& c) { return GroupOp::Comparison.has(c.op()) && word(c.src(c.src(0).dtype().is_weak() ? 1 : 0).dtype()); };
  if (GroupOp::Comparison.has(x0.op()) ? !mask(x0) : !plain(x0.dtype())) return UOp();
  for (auto& x : src)
    if (x.op() != x0.op() || x.dtype() != x0.dtype() || !(x.arg() == x0.arg()) || x.src().size() != x0.src().size() ||
        cg_shape(x) != std::optional<Shape>(Shape{}))
      return UOp();
  for (size_t j = 0; j < x0.src().size(); j++)
    if (DType d = x0.src(j).dtype(); !plain(d) && !d.is_weak() && !(x0.op() == WHERE && j == 0)) return UOp();  // (a weak literal is committed later)
  std::vector<UOp> ops, lane;
  bool vec = false;
  for (size_t j = 0; j < x0.src().size(); j++) {
    lane.clear();
    for (auto& x : src) lane.push_back(x.src(j));
    bool shared = std::all_of(lane.begin(), lane.end(), [&](const UOp& u) { return u == lane[0]; });
    if (x0.op() == WHERE && j == 0 &&
        (shared || !word(x0.dtype()) || !std::all_of(lane.begin(), lane.end(), [&](const UOp& c) { return c.op() == lane[0].op() && mask(c); })))
      return UOp();
    // an operand every lane shares stays a scalar: C broadcasts it
    ops.push_back(shared ? lane[0] : UOp::stack(lane));
    vec |= !shared;
  }
  return vec ? UOp::make(x0.op(), x0.dtype(), ops, x0.arg()) : UOp();
}

// the sum of a vector's lanes in order, v[0]+v[1]+...+v[n-1] (the horizontal sum after matvec_lanes' loop): as halves
// added, n/2 lanes, then n/4, ..., log2(n) vector adds where the chain was n-1 dependent scalar adds. Also the last
// 16 terms of a chain when they are lanes of an exp computed alike (a reduce unrolled along its axis: the softmax's
// sum of exp(scores - max) under a causal mask): those lanes as one vector (vector_lanes), where each lane's exp was a
// scalar chain (4x slower). Not lanes of plain arithmetic: built from scalar loads, the vector can cost more than it saves
UOp lane_sum_tree(const UOp& x) {
  std::vector<UOp> chain;
  UOp c = x, acc;
  while (c.op() == ADD && c.dtype().is_float()) chain.push_back(c.src(1)), c = c.src(0);
  chain.push_back(c);
  std::reverse(chain.begin(), chain.end());
  size_t n = chain.size();
  UOp v = n >= 4 && (n & (n - 1)) == 0 ? vector_of_lanes(chain) : UOp();
  auto exp = [](const UOp& u) { return std::ranges::any_of(u.toposort(), [](const UOp& y) { return y.op() == EXP2; }); };
  if (!v && n >= 16 && exp(chain.back())) {
    if (n > 16) {  // what the last 16 terms are added to
      acc = x;
      for (int i = 0; i < 16; i++) acc = acc.src(0);
    }
    v = vector_lanes(UOp::stack(std::vector<UOp>(chain.end() - 16, chain.end())));
    if (v && v.op() == STACK) v = UOp();
    n = 16;
  }
  if (!v) return UOp();
  for (; n > 1; n /= 2) {
    std::vector<UOp> lo, hi;
    for (size_t i = 0; i < n / 2; i++) lo.push_back(v.index({cint(int64_t(i))})), hi.push_back(v.index({cint(int64_t(i + n / 2))}));
    v = n == 2 ? lo[0] + hi[0] : UOp::stack(lo) + UOp::stack(hi);
  }
  return acc ? acc + v : v;
}

// a lane of a loaded vector, cast: the lane of the vector cast whole (shared by its other lanes). A transposing copy
// of float16 (the GEMM's panels of float16 weights) then shuffles floats, where clang's 16-bit shuffles took 2-3x as long
UOp cast_of_lane(const UOp& c) {
  const UOp& x = c.src(0);
  if (x.op() != INDEX || x.src().size() != 2 || x.src(1).op() != CONST || !cg_shape(x.src(0)) || cg_shape(x.src(0))->size() != 1) return UOp();
  auto plain = [](DType d) { return d == dtypes::float16 || d == dtypes::float32; };
  if (!plain(c.dtype()) || !plain(x.dtype()) || x.src(0).op() != LOAD) return UOp();
  return x.src(0).cast(c.dtype()).index({x.src(1)});
}

const PatternMatcher& pm_vector_lanes() {
  static const PatternMatcher pm = PatternMatcher{
      U(STACK, {}, {}, {}, "s") >> [](M m) { return vector_lanes(m["s"]); },
      U(CAST, {}, {U(INDEX)}, {}, "c") >> [](M m) { return cast_of_lane(m["c"]); },
      U(ADD, {}, {}, {}, "x") >> [](M m) { return lane_sum_tree(m["x"]); },
  }.pure();
  return pm;
}

// exp2 of float32 in SIMD kernels: 0 below 2^-125, its argument clamped there. The decomposition multiplies 2^k by a
// polynomial, a denormal product below 2^-126, which x86 makes a microcode assist of ~100+ cycles without FTZ: a
// softmax's exps of scores far below the row's max, silu over large activations (exp(-x) of x past 87) hit it in bulk
// (the 110M Q4_K prompt's silu 0.80 -> 0.25 ms a layer). exp(x) under x = -86.6 is then 0, not a denormal
const PatternMatcher& pm_exp2_normal() {
  static const PatternMatcher pm = PatternMatcher{
      U(EXP2, dtypes::float32, {V("x")}) >> [](M m) {
        const UOp& x = m["x"];
        UOp low = x.const_like(ConstVal(-125.0));
        if (x.op() == WHERE && x.src(1) == low) return UOp();  // (clamped already)
        UOp under = x < low;
        return under.where(x.const_like(ConstVal(0.0)), under.where(low, x).exp2());
      },
  }.pure();
  return pm;
}

// a*x + b*y on int32 lanes of integers that fit 16 bits, each operand a vector cast up (ggml_dot's lanes, each the sum
// of two products): x86's pmaddwd multiplies 16-bit pairs and adds each pair into an int32 lane, so with a and b
// interleaved (a0 b0 a1 b1 ...) and x and y alike it gives every lane's a*x + b*y exactly (16-bit products cannot
// overflow their 32-bit sum), one instruction where clang multiplies 32-bit lanes (vpmulld) and adds
UOp int_madd(const UOp& add, int64_t most) {
  auto sh = cg_shape(add);
  if (add.dtype() != dtypes::int32 || !sh || sh->size() != 1) return UOp();
  int64_t n = (*sh)[0];
  if ((n != 8 && n != 16) || n > most) return UOp();
  std::vector<UOp> ops;  // a, x, b, y: the 16-bit sources of the casts
  for (const UOp& m : add.src()) {
    if (m.op() != MUL) return UOp();
    for (const UOp& c : m.src()) {
      if (c.op() != CAST || cg_shape(c) != sh) return UOp();
      const UOp& v = c.src(0);  // 16 bits by its dtype or by its range (Q4_K's nibbles: a uint32 masked with 0xF)
      if (!v.dtype().is_int() || v.vmin().as_int() < -32768 || v.vmax().as_int() > 32767) return UOp();
      ops.push_back(c.src(0).cast(dtypes::int16));
    }
  }
  std::string lo_hi;
  for (int64_t i = 0; i < n; i++) lo_hi += ", " + std::to_string(i) + ", " + std::to_string(i + n);
  std::string f = "__builtin_ia32_pmaddwd" + std::to_string(n * 32) + "(__builtin_shufflevector({0}, {2}" + lo_hi + "), __builtin_shufflevector({1}, {3}" + lo_hi + "))";
  return UOp::make(CUSTOMI, dtypes::int32, ops, Arg(f));
}

// byte j of a 32-bit word w as (w >> 8j) & m (m <= 255; the shift, or the mask where the range makes it a no-op,
// may be folded away): {w, j, m}, else a null word
struct WordByte {
  UOp w;
  int64_t j = 0, m = 255;
};
WordByte word_byte(UOp v, bool masked) {
  WordByte b;
  if (v.op() == AND && v.src(1).op() == CONST && v.src(1).val().is_int()) {
    b.m = v.src(1).val().i;
    v = v.src(0);
    if (b.m < 0 || b.m > 255) return {};
  } else if (masked && (v.vmin().as_int() < 0 || v.vmax().as_int() > 255)) return {};  // (a signed byte is cast through int8)
  if (v.op() == SHR && v.src(1).op() == CONST && v.src(1).val().is_int() && v.src(1).val().i % 8 == 0 && v.src(1).val().i <= 24)
    b.j = v.src(1).val().i / 8, v = v.src(0);  // (a shift by another amount is the word's: Q4_K's high nibbles, w >> 4)
  // a word masked alike in every byte (Q4_K's nibbles, w & 0x0F0F0F0F) is the word with the mask
  if (v.op() == AND && v.src(1).op() == CONST && v.src(1).val().is_int() && v.src(1).val().i % 0x01010101 == 0)
    b.m &= v.src(1).val().i / 0x01010101, v = v.src(0);
  if (v.dtype().itemsize() != 4 || !v.dtype().is_int()) return {};
  b.w = v;
  return b;
}

// sum_j u_j * s_j over the 4 bytes of 32-bit words u (unsigned bytes, cast up) and s (signed: through int8) in int32
// lanes (ggml_dot's Q4_K lanes): x86's vpdpbusd, one instruction for the 4 multiplies and 4 adds of every lane
UOp int_dot4(const UOp& add, int64_t most) {
  auto sh = cg_shape(add);
  if (add.dtype() != dtypes::int32 || !sh || sh->size() != 1 || ((*sh)[0] != 8 && (*sh)[0] != 16) || (*sh)[0] > most) return UOp();
  std::vector<UOp> muls, todo{add};
  while (!todo.empty()) {
    UOp x = todo.back();
    todo.pop_back();
    if (x.op() == ADD && x.dtype() == dtypes::int32) todo.insert(todo.end(), x.src().begin(), x.src().end());
    else if (x.op() == MUL && muls.size() < 4) muls.push_back(x);
    else return UOp();
  }
  if (muls.size() != 4) return UOp();
  UOp u, s;
  int64_t m = -1, seen = 0;
  for (const UOp& x : muls) {
    WordByte ub, sb;
    for (int o = 0; o < 2 && !sb.w; o++) {
      const UOp &a = x.src(size_t(o)), &c = x.src(size_t(1 - o));
      if (a.op() != CAST || c.op() != CAST || c.src(0).op() != CAST || c.src(0).dtype() != dtypes::int8) continue;
      ub = word_byte(a.src(0), true), sb = word_byte(c.src(0).src(0), false);
    }
    // (a signed byte is the whole byte: a mask below 255 before the int8 cast would change it)
    if (!ub.w || !sb.w || sb.m != 255 || ub.j != sb.j || (u && (ub.w != u || sb.w != s || ub.m != m)) || (seen >> ub.j & 1)) return UOp();
    u = ub.w, s = sb.w, m = ub.m, seen |= int64_t(1) << ub.j;
  }
  if (cg_shape(u) != sh || cg_shape(s) != sh) return UOp();  // (a word all lanes share stays a scalar)
  if (m != 255) u = u & u.const_like(ConstVal(int64_t(m) * 0x01010101));
  // (the accumulator is zero, spelled s ^ s: it has s's vector type)
  std::string f = "__builtin_ia32_vpdpbusd" + std::to_string((*sh)[0] * 32) + "({1} ^ {1}, {0}, {1})";
  return UOp::make(CUSTOMI, dtypes::int32, {u, s}, Arg(f));
}

// a vpdpbusd of bytes masked to 6 bits or fewer (Q4_K's nibbles): |lane| <= 4 * 63 * 128 < 2^15, a 16-bit integer in
// the lane's low half with its sign in the high one
bool small_dot4(const UOp& d) {
  if (d.op() != CUSTOMI || !d.arg().s().starts_with("__builtin_ia32_vpdpbusd")) return false;
  const UOp& u = d.src(0);
  return u.op() == AND && u.src(1).op() == CONST && u.src(1).val().is_int() && u.src(1).val().i % 0x01010101 == 0 &&
         u.src(1).val().i / 0x01010101 <= 63;
}
// such a dot times a cast of a non-negative 16-bit integer (a sub-block's 6-bit scale) as pmaddwd: the 16-bit halves'
// products summed, lo(d) * s + hi(d) * 0, exact; where clang multiplies 32-bit lanes (vpmulld: 2 uops, 10 cycles)
UOp scaled_dot4(const UOp& mul) {
  for (int o = 0; o < 2; o++) {
    const UOp &d = mul.src(size_t(o)), &s = mul.src(size_t(1 - o));
    auto sh = cg_shape(d);
    if (!small_dot4(d) || s.op() != CAST || cg_shape(s) != sh || s.vmin().as_int() < 0 || s.vmax().as_int() > 32767) continue;
    return UOp::make(CUSTOMI, dtypes::int32, {d, s}, Arg("__builtin_ia32_pmaddwd" + std::to_string((*sh)[0] * 32) + "({0}, {1})"));
  }
  return UOp();
}
// acc + pmaddwd(d, s) as one vpdpwssd (VNNI, as vpdpbusd): a super-block's scaled sub-block sums chained in int32;
// acc + vpdpwssd(x, d, s) is vpdpwssd(acc + x, d, s) (int32 sums wrap alike in any order), so two chains become one
UOp acc_scaled_dot4(const UOp& add) {
  for (int o = 0; o < 2; o++) {
    const UOp &acc = add.src(size_t(o)), &p = add.src(size_t(1 - o));
    if (p.op() == CUSTOMI && p.arg().s().starts_with("__builtin_ia32_vpdpwssd") && cg_shape(acc) == cg_shape(p))
      return p.replace({.src = std::vector{acc + p.src(0), p.src(1), p.src(2)}});
    if (p.op() != CUSTOMI || !p.arg().s().starts_with("__builtin_ia32_pmaddwd") || !small_dot4(p.src(0)) || cg_shape(acc) != cg_shape(p)) continue;
    return UOp::make(CUSTOMI, dtypes::int32, {acc, p.src(0), p.src(1)},
                     Arg("__builtin_ia32_vpdpwssd" + std::to_string((*cg_shape(p))[0] * 32) + "({0}, {1}, {2})"));
  }
  return UOp();
}

const PatternMatcher& pm_int_dot4() {
  static const PatternMatcher pm{
      U(ADD, dtypes::int32, {}, {}, "x") >> [](M m) {
        if (UOp r = int_dot4(m["x"], m.ctx<const CStyleLanguage>().vpdpbusd_lanes)) return r;
        return acc_scaled_dot4(m["x"]);
      },
      U(MUL, dtypes::int32, {}, {}, "x") >> [](M m) { return scaled_dot4(m["x"]); },
  };
  return pm;
}

const PatternMatcher& pm_int_madd() {
  static const PatternMatcher pm{
      U(ADD, dtypes::int32, {}, {}, "x") >> [](M m) { return int_madd(m["x"], m.ctx<const CStyleLanguage>().pmaddwd_lanes); },
  };
  return pm;
}

const PatternMatcher& pm_cast_float_alu() {
  static const PatternMatcher pm = PatternMatcher{
      U(OpSet{SIN, LOG2, EXP2, SQRT, RECIPROCAL}, {}, {V("x")}, {}, "u") >> [](M m) {
        const UOp &u = m["u"], &x = m["x"];
        return x.dtype() != u.dtype() ? u.replace({.src = std::vector{x.cast(u.dtype())}}) : UOp();
      },
  }.pure();
  return pm;
}

}  // namespace tg
