// get_kernel_graph (tinygrad's schedule/rangeify.py), in the order the passes run: 0. pm_mops (uop/movement.cpp),
// 1. earliest rewrites, 2. copy to store, 3. rangeify (indexing.cpp), 4. cleanups (reduce simplify from
// codegen/simplify.cpp, const folding, remove bufferize), 5.-7. limit buffers, STAGE -> STORE, split kernels
// (kernelize.cpp); the pass list is at the end.
#include "schedule/rangeify.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <unordered_set>

#include "codegen/simplify.h"
#include "schedule/indexing.h"
#include "uop/args.h"
#include "uop/movement.h"
#include "uop/pattern_helpers.h"
#include "uop/symbolic.h"
#include "util/env.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
const std::optional<Shape>& shape_or_none(const UOp& u) {
  static const std::optional<Shape> none;
  const auto* s = u.shape_if_valid();
  return s ? *s : none;
}
}  // namespace

// ***** 1. earliest rewrites *****

namespace {
UOp fix_store_hazard(const UOp& target, const UOp& src) {
  UOp base = target.base();
  if (!has(src.toposort(nullptr, false), base)) return UOp();
  // PERMUTE and FLIP reorder indices; SHRINK can overlap when the destination is shrunk too
  OpSet unsafe{PERMUTE, FLIP};
  if (target.op_in_backward_slice_with_self(SHRINK)) unsafe.add(SHRINK);
  std::unordered_map<UOp, bool> reaches_base;
  for (auto& s : src.toposort([](const UOp& s) { return s.op() != CONTIGUOUS; })) {
    bool r = s == base;
    for (auto& c : s.src()) if (auto it = reaches_base.find(c); it != reaches_base.end() && it->second) r = true;
    reaches_base[s] = r;
    if (r && unsafe.has(s.op()) && !(s == target && s.op() == SHRINK)) return target.store(src.contiguous());
  }
  return UOp();
}

// SIMD kernels, and u runs on a CPU device
bool simd_cpu(const UOp& u) {
  std::string dev = u.device().value_or("");
  return simd_kernels() && (dev == "CPU" || dev.starts_with("CPU:"));
}
// the reduce splits below: SIMD kernels on the CPU, a float32 input of known shape
bool simd_cpu_float_reduce(const UOp& reduce, const UOp& x) {
  return simd_cpu(reduce) && x.dtype() == dtypes::float32 && !reduce.has_sym_shape() && !x.has_sym_shape();
}
// ... read straight from a buffer (no elementwise op or reduce to fuse into the first kernel)
bool stored(const UOp& x) { return !GroupOp::Elementwise.has(x.base().op()) && x.base().op() != REDUCE; }

// SIMD CPU kernels, a float32 reduce of a whole tensor (no axis kept, none expanded): its n elements as (parts, n /
// (parts * 64), 64), reduced over the middle axis first, then the parts * 64 partials. Each part is a contiguous stretch
// of the input, streamed by one thread a row of 64 at a time into 64 columns of vector accumulators (column_reduce in
// the heuristic), where tinygrad's split below reads each part's outputs as one chain of scalar adds. Parts: the most,
// up to 256, that the threads divide evenly; within REDUCEOP_SPLIT_SIZE like that split, which runs when this one does
// not fit. Each part streams at least 2 rows, so the partials are at most half the input and splitting them again
// (a low REDUCEOP_SPLIT_THRESHOLD) ends
UOp split_whole_reduce(const UOp& reduce, const UOp& x, const std::vector<int64_t>& real_axes) {
  const Settings& st = settings();
  if (!simd_cpu_float_reduce(reduce, x) || prod(reduce.shape()) != 1) return UOp();
  const Shape& xs = x.shape();
  for (size_t i = 0; i < xs.size(); i++) if (xs[i] > 1 && !has(real_axes, int64_t(i))) return UOp();
  constexpr int64_t cols = 64;
  int64_t n = prod(xs), threads = st.THREADS ? std::max<int64_t>(1, st.NUM_CPU_THREADS) : 1;
  for (int64_t parts = std::min<int64_t>(256, (int64_t(1) << st.REDUCEOP_SPLIT_SIZE) / cols); parts >= 8; parts--)
    if (parts % threads == 0 && n % (parts * cols) == 0 && n / (parts * cols) >= 2) {
      Ops rop = Ops(reduce.arg().ints()[0]);
      return x.reshape({parts, n / (parts * cols), cols}).rop(rop, {1}).contiguous().rop(rop, {0, 1}).reshape(reduce.shape());
    }
  return UOp();
}

UOp split_reduceop(const UOp& reduce, const UOp& x) {
  if (reduce.has_sym_shape() || x.has_sym_shape()) return UOp();  // symbolic sizes: no split
  int64_t rsize = prod(reduce.shape());
  if (rsize == 0) return UOp();
  const Shape& xs = x.shape();
  const Settings& st = settings();
  // SIMD CPU kernels split at a quarter of the threshold into parts a quarter the size (fewer parts): beautiful_mnist's
  // last weight gradients (c3, c4 in bench/conv: 32,768 and 18,432 terms per weight) run 10-15 % faster
  // (not a whole reduce: its split's 2^14 partials would be split again)
  int64_t quarter = rsize > 1 && simd_cpu(reduce) ? 2 : 0;
  if (!st.SPLIT_REDUCEOP || prod(xs) / rsize < st.REDUCEOP_SPLIT_THRESHOLD >> quarter) return UOp();
  // which axes of x are real (not expanded): index x with ranges, push the index through its movement ops
  std::vector<UOp> rngs;
  for (size_t i = 0; i < xs.size(); i++) rngs.push_back(xs[i] > 1 ? UOp::range(xs[i], int64_t(i)) : cint(0));
  UOp indexed = x.index(rngs).substitute({{x.base(), UOp::make(NOOP, dtypes::void_, {})}}, &pm_mops());
  std::vector<int64_t> range_nums;
  for (auto& r : indexed.ranges()) range_nums.push_back(r.arg().ints()[0]);
  int64_t naxes = reduce.arg().ints()[1];
  if (UOp c = split_whole_reduce(reduce, x, range_nums)) return c;
  std::optional<std::pair<int64_t, int64_t>> split;
  for (int64_t i = 0; i < naxes && !split; i++)
    for (int64_t d = std::min<int64_t>(256, (int64_t(1) << std::max<int64_t>(st.REDUCEOP_SPLIT_SIZE - quarter, 0)) / rsize); d >= 8 && !split; d--)
      if (xs[i] % d == 0 && has(range_nums, i)) split = {i, d};
  if (!split) return UOp();
  auto [dim, divisor] = *split;
  Shape splitted_shape(xs.begin(), xs.begin() + dim);
  splitted_shape.push_back(divisor);
  splitted_shape.push_back(xs[dim] / divisor);
  splitted_shape.insert(splitted_shape.end(), xs.begin() + dim + 1, xs.end());
  // tinygrad stores the partial results with the split axis last. SIMD kernels put it first: it is then the first
  // kernel's outer loop, and each part's slice of the input stays in cache across all the outputs it feeds
  bool split_first = simd_kernels();
  std::vector<int64_t> perm, first_axes;
  if (split_first) perm.push_back(dim);
  for (int64_t d = 0; d < int64_t(splitted_shape.size()); d++) if (d != dim) perm.push_back(d);
  if (!split_first) perm.push_back(dim);
  UOp splitted = x.reshape(splitted_shape).permute(perm);
  for (int64_t i = 0; i < naxes; i++) first_axes.push_back(i + split_first);
  Ops rop = Ops(reduce.arg().ints()[0]);
  int64_t split_axis = split_first ? 0 : int64_t(reduce.shape().size());
  return splitted.rop(rop, first_axes).contiguous().rop(rop, {split_axis}).reshape(reduce.shape());
}

// SIMD CPU kernels, a float32 reduce of each contiguous row of K >= 1024 elements (a multiple of 64) of a stored tensor
// of 2^20 elements or more (a sum or max over the last axis): read as (rows, K / 64, 64) and reduced over the middle
// axis first, then the rows' 64 partials. The first kernel keeps 64 columns of vector accumulators per row
// (column_reduce) where the heuristic's tile reduces 4 floats of 8 rows a step into 8 scalars, which clang shuffles
// lane by lane (max over a 4096 x 4096 tensor: half the sum's speed). The partials add 1/16 to the bytes read when K
// is 1024
UOp split_row_reduce(const UOp& reduce, const UOp& x) {
  if (!simd_cpu_float_reduce(reduce, x) || !stored(x)) return UOp();
  const Shape& xs = x.shape();
  int64_t naxes = reduce.arg().ints()[1], rows = prod(reduce.shape()), k = prod(Shape(xs.begin(), xs.begin() + naxes));
  if (rows < 2 || k < 1024 || k % 64 != 0 || rows * k < (int64_t(1) << 20)) return UOp();
  std::vector<int64_t> rows_first;  // x has the reduced axes first: put them last, where a row must be contiguous
  for (int64_t i = naxes; i < int64_t(xs.size()); i++) rows_first.push_back(i);
  for (int64_t i = 0; i < naxes; i++) rows_first.push_back(i);
  UOp view = x.permute(rows_first);
  if (!view.contiguous_view_offset()) return UOp();
  Ops rop = Ops(reduce.arg().ints()[0]);
  return view.reshape({rows, k / 64, 64}).rop(rop, {1}).contiguous().rop(rop, {1}).reshape(reduce.shape());
}

// SIMD CPU kernels, a float32 reduce over the outer axes of a stored tensor of 2^20 elements or more whose kept axes
// are contiguous (a sum down the columns), at least 128 rows of a multiple of 8 columns: read as (rows / 16, 16,
// columns), reduced over blocks of 16 rows first, then over the blocks. One pass of column_reduce's 64-column tile down
// all the rows reads 256 bytes of every row, a page apart for a row of 1024 floats or more (4096 x 4096: 4.5-9 GB/s
// in most runs); a block of 16 rows keeps the tile's passes within 16 neighbouring rows (14-25 GB/s), for 1/16 more
// bytes written and read back
UOp split_column_reduce(const UOp& reduce, const UOp& x) {
  if (!simd_cpu_float_reduce(reduce, x) || !stored(x)) return UOp();
  int64_t cols = prod(reduce.shape()), rows = prod(x.shape()) / std::max<int64_t>(cols, 1);
  if (cols < 8 || cols % 8 != 0 || rows < 128 || rows % 16 != 0 || rows * cols < (int64_t(1) << 20) || !x.contiguous_view_offset()) return UOp();
  Ops rop = Ops(reduce.arg().ints()[0]);
  return x.reshape({rows / 16, 16, cols}).rop(rop, {1}).contiguous().rop(rop, {0}).reshape(reduce.shape());
}

// the terms summed (or maxed) into each output of a REDUCE: 0 where a shape is unknown
int64_t reduce_terms(const UOp& r) {
  const auto &in = shape_or_none(r.src(0)), &out = shape_or_none(r);
  return in && out && prod(*out) > 0 ? prod(*in) / prod(*out) : 0;
}
constexpr OpSet unbroadcast_movement{RESHAPE, PERMUTE, SHRINK, PAD, FLIP};
bool heavy_reduce(const UOp& r) { return r.op() == REDUCE && reduce_terms(r) >= 64; }  // a convolution's, a matmul's

// the heavy REDUCEs x is computed from through elementwise ops of its shape and movement ops that do not broadcast
// (their first source): the producers that fuse into x's kernel as its loop nest's innermost part
void heavy_reduces_under(const UOp& x, std::unordered_set<UOp>& seen, std::vector<UOp>& out) {
  if (!seen.insert(x).second) return;
  if (x.op() == REDUCE) {
    if (heavy_reduce(x)) out.push_back(x);
  } else if (unbroadcast_movement.has(x.op())) {
    heavy_reduces_under(x.src(0), seen, out);
  } else if (GroupOp::Elementwise.has(x.op())) {
    for (auto& s : x.src()) if (shape_or_none(s) == shape_or_none(x)) heavy_reduces_under(s, seen, out);
  }
}

// SIMD CPU kernels: a light REDUCE (a pooling window: 16 terms or fewer per output) fed, through elementwise ops and
// movement ops that do not broadcast, by a heavy one (a convolution or matmul: 64 terms or more) stores that producer
// first. Fused, the producer's loop nests inside the window's (eval beautiful_mnist: conv, relu, BatchNorm and the 2x2
// max-pool in one kernel), where the heuristic finds no register tile: 8-15 GFLOPS, and the eval forward 3.4x slower
// than split (bench/infer). The stored intermediate costs one write and one read per output against 64+ multiply-adds.
// SIMD=0 keeps tinygrad's fusion.
UOp separate_heavy_reduce(const UOp& reduce, const UOp& x) {
  if (!simd_cpu(reduce) || reduce.has_sym_shape() || reduce_terms(reduce) == 0 || reduce_terms(reduce) > 16) return UOp();
  std::unordered_map<UOp, UOp> memo;
  bool found = false;
  // x rebuilt with each heavy REDUCE on the way (heavy_reduces_under's walk) stored (a CONTIGUOUS): only there, where
  // its loop would nest inside the window's (a substitute of those REDUCEs everywhere would also reach assigns' sources)
  std::function<UOp(const UOp&)> rebuild = [&](const UOp& u) -> UOp {
    if (auto it = memo.find(u); it != memo.end()) return it->second;
    UOp r = u;
    if (u.op() == REDUCE) {
      if (heavy_reduce(u)) r = u.contiguous(), found = true;
    } else if (GroupOp::Elementwise.has(u.op()) || unbroadcast_movement.has(u.op())) {
      bool mv = unbroadcast_movement.has(u.op()), changed = false;
      std::vector<UOp> src(u.src().begin(), u.src().end());
      for (size_t i = 0; i < (mv ? 1 : src.size()); i++) {
        if (!mv && shape_or_none(src[i]) != shape_or_none(u)) continue;  // broadcast: realized anyway
        UOp n = rebuild(src[i]);
        changed |= n != src[i], src[i] = n;
      }
      if (changed) r = u.replace({.src = src});
    }
    return memo[u] = r;
  };
  UOp nx = rebuild(x);
  return found ? reduce.replace({.src = std::vector{nx}}) : UOp();
}

// SIMD CPU kernels: a transcendental (exp2, log2, sin) next to a heavy REDUCE (a matmul: 64 terms or more) is stored
// apart from it. Fused, the clang kernels compute it lane by lane in scalar code:
// - read by the REDUCE broadcast 8-fold or more (softmax @ v: the softmax's exp broadcast along the head dim), it is
//   recomputed for every element it is broadcast to (bench/infer's block computed each exp 48 times: 300 ms at 7
//   GFLOPS). The transcendental op itself is stored, so the softmax's sum reads the same exps;
// - applied to the REDUCE's value through elementwise ops and movement ops that do not broadcast (fc1 + bias -> tanh-
//   gelu), it is an epilogue of 256 scalar exps after each register tile (fc1: 38 ms against 10 ms for the same GEMM
//   without it); the REDUCE is stored, and its epilogue is an elementwise kernel.
// Each costs one more write and read of the stored tensor. A SINK rule: every consumer reads the stored value (gelu's
// x * 0.5 as well as its tanh)
UOp store_transcendentals_apart(const UOp& sink) {
  constexpr OpSet transcendental{EXP2, LOG2, SIN};
  auto fused = [](const UOp& u) { return GroupOp::Elementwise.has(u.op()) || GroupOp::Movement.has(u.op()); };
  auto numel = [](const UOp& u) { const auto& s = shape_or_none(u); return s ? prod(*s) : int64_t(0); };
  auto heavy = [](const UOp& r) { return simd_cpu(r) && !r.has_sym_shape() && heavy_reduce(r); };
  std::unordered_map<UOp, UOp> stores;
  std::unordered_set<UOp> seen_down, seen_up[2];
  std::vector<UOp> epilogue_of;  // the heavy REDUCEs a transcendental is an epilogue of
  // from a heavy REDUCE's input up to the transcendentals it reads broadcast (an EXPAND, or an elementwise op's source
  // of fewer elements, broadcasts; movement ops pass only their first source)
  std::function<void(const UOp&, bool)> up = [&](const UOp& u, bool broadcast) {
    if (!fused(u) || !seen_up[broadcast].insert(u).second) return;
    if (broadcast && transcendental.has(u.op())) stores[u] = u.contiguous();
    for (size_t i = 0; i < (GroupOp::Movement.has(u.op()) ? 1 : u.src().size()); i++) up(u.src(i), broadcast || numel(u) >= 8 * numel(u.src(i)));
  };
  for (auto& u : sink.toposort([](const UOp& x) { return x.op() != CALL && x.op() != FUNCTION; })) {
    if (transcendental.has(u.op())) heavy_reduces_under(u.src(0), seen_down, epilogue_of);
    if (u.op() == REDUCE && heavy(u)) up(u.src(0), false);
  }
  for (auto& r : epilogue_of) if (heavy(r)) stores[r] = r.contiguous();
  for (auto it = stores.begin(); it != stores.end();) it = it->second == it->first ? stores.erase(it) : std::next(it);
  return stores.empty() ? UOp() : sink.substitute(stores, nullptr, true);
}

UOp resolve_function(const UOp& c) {
  if (auto* ci = call_info(c); ci && ci->precompile) return UOp();
  std::vector<UOp> params;
  for (auto& x : c.src(0).toposort()) if (x.op() == PARAM && x.arg().param().slot >= 0) params.push_back(x);
  std::unordered_map<UOp, UOp> dict_map;
  for (auto& p : params) {
    const UOp& a = c.src(1 + p.arg().param().slot);
    if (p.shape_opt() != a.shape_opt()) throw Error("FUNCTION: arg shape mismatch: expected " + shape_str(p.shape()) + ", got " + shape_str(a.shape()));
    if (p.dtype() != a.dtype()) throw Error("FUNCTION: arg dtype mismatch");
    dict_map[p] = a;
  }
  return c.src(0).substitute(dict_map, nullptr, true);
}

UOp bitcast_to(const UOp& x, DType dt) { return x.dtype() == dt ? x : x.bitcast(dt); }
DType uint_of(int64_t bytes) { return bytes == 1 ? dtypes::uint8 : bytes == 2 ? dtypes::uint16 : bytes == 4 ? dtypes::uint32 : dtypes::uint64; }

// a BITCAST that changes the itemsize: reinterpret through uints, combining (shift + add) or splitting (shift + stack)
UOp expand_bitcast(const UOp& bc) {
  const UOp& x = bc.src(0);
  int64_t ns = bc.dtype().itemsize(), os = x.dtype().itemsize();
  if (ns == os) return UOp();
  if (auto d = x.device(); d && (d->starts_with("DISK") || d->starts_with("TINYFS"))) return UOp();
  DType new_uint = uint_of(ns);
  UOp tmp = bitcast_to(x, uint_of(os));
  if (ns > os) {
    int64_t rate = ns / os;
    Shape shp = x.shape();
    int64_t last = shp.back();
    shp.back() = last / rate;
    shp.push_back(rate);
    tmp = tmp.reshape(shp);
    std::vector<UOp> parts;
    for (int64_t i = 0; i < rate; i++) {
      std::vector<std::pair<int64_t, int64_t>> se;
      for (size_t d = 0; d + 1 < shp.size(); d++) se.push_back({0, shp[d]});
      se.push_back({i, i + 1});
      parts.push_back(tmp.shrink(se).cast(new_uint) << 8 * i * os);
    }
    return bitcast_to(parts[0].usum(tail(parts, 1)).squeeze(-1), bc.dtype());
  }
  std::vector<UOp> parts;
  for (int64_t i = 0; i < os / ns; i++) parts.push_back(tmp >> 8 * i * ns);
  // parts[0].stack(*parts[1:], dim=-1): a data STACK (leading axis) permuted to the end
  DType dt = *dtype_from_uop(STACK, parts, Arg());
  std::vector<UOp> srcs;
  for (auto& u : parts) srcs.push_back(u.base().is_invalid() ? u : u.op() == CONST ? UOp::const_(u.val(), dt) : u.cast(dt));
  UOp st = UOp::make(STACK, dt, srcs);
  int64_t dim = int64_t(parts[0].shape().size());
  std::vector<int64_t> perm;
  for (int64_t d = 1; d <= dim; d++) perm.push_back(d);
  perm.push_back(0);
  return bitcast_to(st.permute(perm).flatten(-2).cast(new_uint), bc.dtype());
}

constexpr OpSet ALWAYS_RUN_OPS{CONTIGUOUS, NOOP};
}  // namespace

const PatternMatcher& pm_inline_functions() {
  static const PatternMatcher pm{
      U(FUNCTION, {}, {}, {}, "c") >> [](M m) { return resolve_function(m["c"]); },
      U(GETTUPLE, {}, {U(TUPLE, {}, {}, {}, "t")}, {}, "g") >> [](M m) { return m["t"].src(m["g"].arg().i()); },
  };
  return pm;
}

UOp inline_functions(const UOp& x) { return graph_rewrite(x, pm_inline_functions(), RewriteOpts{.bottom_up = true}); }

const PatternMatcher& earliest_rewrites() {
  static const PatternMatcher pm = mop_cleanup() + pm_inline_functions() + PatternMatcher{
      U(REDUCE, {}, {V("x")}, {}, "reduce") >> [](M m) { return split_reduceop(m["reduce"], m["x"]); },
      U(REDUCE, {}, {V("x")}, {}, "reduce") >> [](M m) { return split_row_reduce(m["reduce"], m["x"]); },
      U(REDUCE, {}, {V("x")}, {}, "reduce") >> [](M m) { return split_column_reduce(m["reduce"], m["x"]); },
      U(REDUCE, {}, {V("x")}, {}, "reduce") >> [](M m) { return separate_heavy_reduce(m["reduce"], m["x"]); },
      U(OpSet{DETACH, CONTIGUOUS_BACKWARD}, {}, {}, {}, "x") >> [](M m) { return m["x"].src(0); },
      U(SINK, {}, {}, {}, "x") >> [](M m) { return store_transcendentals_apart(m["x"]); },
      // the SINK only references bases
      U(SINK, {}, {}, {}, "x") >> [](M m) {
        std::vector<UOp> s;
        for (auto& y : m["x"].src()) s.push_back(y.unsharded_base());
        return m["x"].replace({.src = s});
      },
      // ** copy rules **
      U(COPY, {}, {U::ops(GroupOp::Movement, "r")}, {}, "c") >> [](M m) {
        const UOp& r = m["r"];
        if (r.numel() != r.base().numel() || !r.contiguous_view_offset()) return m["c"].replace({.src = std::vector{r.contiguous()}});
        return UOp();
      },
      U(COPY, {}, {V("x")}, {}, "copy") >> [](M m) { return m["x"].device() == m["copy"].device() ? m["x"] : UOp(); },
      U(COPY, {}, {U(RESHAPE, {}, {}, {}, "shp", true)}, {}, "cpy") >> [](M m) {
        return m["shp"].src(0).copy_to_device(m["cpy"].arg().s()).reshape(m["shp"].shape());
      },
      // a STORE of a reshape into a reshape of the same shape is a plain STORE
      U(STORE, {}, {U(RESHAPE, {}, {V("dst")}, {}, {}, true), U(RESHAPE, {}, {V("src")}, {}, {}, true)}) >> [](M m) {
        return m["dst"].sym_shape() == m["src"].sym_shape() ? m["dst"].store(m["src"]) : UOp();
      },
      // ** store rules **
      U(STORE, {}, {V("target"), V("src")}) >> [](M m) { return fix_store_hazard(m["target"], m["src"]); },
      // two STOREs of the same value to the same place
      U(AFTER, {}, {U(AFTER, {}, {V("buf"), V("buf").store(V("src"))}, {}, "a1"), V("a1").store(V("src"))}) >> [](M m) { return m["a1"]; },
      // a buffer's own current contents stored back into itself
      U(AFTER, {}, {V("buf"), V("buf").store(U(AFTER, {}, {V("buf"), V("buf").store(V("src"))}, {}, "a1"))}) >> [](M m) { return m["a1"]; },
      // move a bitcast from the store destination to the value
      U(STORE, {}, {U(BITCAST, {}, {V("target")}), V("src")}) >> [](M m) {
        return m["target"].store(bitcast_to(m["src"], m["target"].dtype()));
      },
      U(BITCAST, {}, {}, {}, "bc") >> [](M m) { return expand_bitcast(m["bc"]); },
      // ** size 0 **
      U(REDUCE, {}, {V("x")}, {}, "reduce") >> [](M m) {
        const UOp &reduce = m["reduce"], &x = m["x"];
        if (!shape_or_none(x) || !has(x.shape(), int64_t(0)) || !shape_or_none(reduce) || has(reduce.shape(), int64_t(0))) return UOp();
        Ops op = Ops(reduce.arg().ints()[0]);
        DType dt = reduce.dtype();
        ConstVal v = op == ADD ? dt.const_(int64_t(0)) : op == MUL ? dt.const_(int64_t(1)) : dt.const_(dt.min());
        return reduce.const_like_shaped(v);
      },
      U::ops(GroupOp::All - OpSet{SINK}, "x") >> [](M m) {
        const UOp& x = m["x"];
        const auto& sh = shape_or_none(x);
        if (!sh || !has(*sh, int64_t(0))) return UOp();
        return x.const_like_shaped(int64_t(0)).replace({.tag = x.tag()});
      },
  };
  return pm;
}

// SIMD=1 (nn_ops.cpp's conv2d): the convolution stores its input (stored_input) and its output inside its FUNCTION.
// Inlined, that gives copies of a copy: the input of a convolution that is already stored (a realized tensor, the
// padded gradient of the input-gradient convolution), and the output stored once more by the realize that wraps the
// call. Each is a pass over the data for nothing (c2's forward: 4 kernels, 2 of them copies). A copy of a stored value
// reads that value instead; a single-use copy that is stored reads its source (unless the source reads the target).
UOp drop_double_copies(const UOp& sink) {
  if (!simd_kernels()) return sink;
  static const PatternMatcher copy_of_stored{U(CONTIGUOUS, {}, {V("x")}, {}, "c") >> [](M m) -> UOp {
    UOp b = m["x"];
    while (b.op() == RESHAPE) b = b.src(0);
    return m["c"].tag().none() && (b.op() == CONTIGUOUS || b.has_buffer_identity(true)) ? m["x"] : UOp();
  }};
  static const PatternMatcher stored_copy{V("target").store(U(CONTIGUOUS, {}, {V("x")}, {}, "c")) >> [](M m) -> UOp {
    const UOp &c = m["c"], &x = m["x"], &target = m["target"];
    auto& uses = m.ctx<const std::unordered_map<UOp, int>>();
    if (auto it = uses.find(c); !c.tag().none() || it == uses.end() || it->second != 1) return UOp();
    return has(x.toposort(nullptr, false), target.base()) ? UOp() : target.store(x);
  }};
  UOp ret = graph_rewrite(sink, copy_of_stored);
  std::unordered_map<UOp, int> uses;  // (after the first rewrite: it gives copies new users)
  for (auto& u : ret.toposort()) for (auto& s : u.src()) uses[s]++;
  return graph_rewrite(ret, stored_copy, &uses);
}

// ***** 2. copy to store *****

namespace {
UOp convert_copy_to_store(int64_t& ctx, const UOp& copy, const UOp& existing_buf) {
  UOp input_src = copy.src(0);
  if (!input_src.has_buffer_identity(true)) input_src = input_src.contiguous();
  input_src = input_src.flatten();
  if (existing_buf) {
    if (!existing_buf.has_buffer_identity(true)) return UOp();
    return existing_buf.flatten().store(input_src);
  }
  ParamArg pa{ctx++, copy.dtype()};
  pa.device = copy.arg().s();
  UOp buf = UOp::make(BUFFER, copy.dtype(), {cint(prod(input_src.shape()))}, Arg(pa));
  return buf.after({buf.store(input_src)}).reshape(copy.shape());
}
}  // namespace

const PatternMatcher& pm_copy_to_store() {
  static const PatternMatcher pm{
      V("existing_buf").store(U(COPY, {}, {}, {}, "copy")) >> [](M m) {
        return convert_copy_to_store(m.ctx<int64_t>(), m["copy"], m["existing_buf"]);
      },
      U(COPY, {}, {}, {}, "copy") >> [](M m) { return convert_copy_to_store(m.ctx<int64_t>(), m["copy"], UOp()); },
  };
  return pm;
}

// ***** 4. cleanups: const folding, remove bufferize (reduce simplification: codegen/simplify.cpp) *****

namespace {
// a STAGE whose axis is never read (its range is dead, or a CONST) stores one element and is expanded back
UOp cleanup_dead_axes(const UOp& b) {
  const BufferizeOpts* o = bufferize_opts(b);
  if (!o || !o->removable) return UOp();
  if (ALWAYS_RUN_OPS.has(b.src(0).op()) || b.src(0).op() == AFTER) return UOp();
  std::vector<UOp> new_rng, src_ranges = b.src(0).ranges();
  Shape reshape;
  bool hit = false;
  const Shape& bs = b.shape();
  for (size_t i = 0; i + 1 < b.src().size() && i < bs.size(); i++) {
    const UOp& rng = b.src(i + 1);
    if (rng.op() == RANGE && rng.src(0).op() != CONST) return UOp();
    if (rng.op() == CONST || (rng.op() == RANGE && !has(src_ranges, rng))) {
      reshape.push_back(1);
      hit = true;
    } else {
      reshape.push_back(bs[i]);
      new_rng.push_back(rng);
    }
  }
  if (!hit) return UOp();
  return b.replace({.src = cat({b.src(0)}, new_rng)}).reshape(reshape).expand(bs);
}

UOp remove_noop_bufferize(const UOp& idx, const UOp& b2) {
  if (tail(idx.src(), 1) != tail(b2.src(), 1)) return UOp();
  const Shape& s = b2.shape();
  if (s.empty()) return idx.src(0);
  std::vector<std::pair<int64_t, int64_t>> se;
  for (auto x : s) se.push_back({0, x});
  return idx.src(0).shrink(se);
}

bool after_all_invalid(const UOp& after) {
  UOp buf = after.src(0).buf_uop();
  for (size_t i = 1; i < after.src().size(); i++) {
    const UOp& s = after.src(i);
    if (s.op() != END || s.src(0).op() != STORE) return false;
    const UOp& st = s.src(0);
    if (!st.src(1).base().is_invalid() || st.src(0).buf_uop() != buf) return false;
    std::vector<UOp> st_ranges = st.src(0).ranges();
    int64_t n = 1;
    for (auto& r : s.ended_ranges()) {
      if (!has(st_ranges, r)) return false;
      if (r.src(0).op() != CONST) return false;
      n *= r.src(0).val().i;
    }
    if (n != buf.numel()) return false;
  }
  return true;
}

// remove a STAGE that is read through an INDEX when recomputing its value there is cheap
UOp remove_bufferize(const UOp& src, const UOp& buf, const UOp& idx) {
  if (buf.src().size() != idx.src().size()) internal_error("index on wrong bufferize");
  const BufferizeOpts* o = bufferize_opts(buf);
  if (ALWAYS_RUN_OPS.has(src.op()) || !o || !o->removable) return UOp();
  std::vector<UOp> accessed_buffers, reduces;
  auto add_buf = [&](const UOp& b) { if (!has(accessed_buffers, b)) accessed_buffers.push_back(b); };
  src.toposort([&](const UOp& x) {
    if (x.op() == AFTER) { add_buf(x.buf_uop()); return false; }
    if (x.op() == STAGE) if (auto* xo = bufferize_opts(x); xo && xo->addrspace == AddrSpace::GLOBAL) { add_buf(x); return false; }
    if (x.op() == MSTACK) { add_buf(x); return false; }
    if (x.op() == STORE) return false;
    if (x.op() == PARAM) add_buf(x);
    if (x.op() == REDUCE) reduces.push_back(x);
    return true;
  });
  // generated from many buffers: keep it
  if (accessed_buffers.size() > 3) return UOp();
  // a reduce reading a buffer: keep it
  std::vector<UOp> rsrc;
  for (auto& r : reduces) rsrc.push_back(r.src(0));
  for (auto& x : UOp::sink(rsrc).toposort()) if (OpSet{PARAM, STAGE, AFTER}.has(x.op())) return UOp();
  std::unordered_map<UOp, UOp> replaced;
  for (size_t i = 1; i < buf.src().size(); i++) {
    const UOp &k = buf.src(i), &v = idx.src(i);
    if (k.op() != CONST && !v.is_invalid()) replaced[k] = v;
  }
  static const PatternMatcher pm_gate_substitute{U::ops(GroupOp::All, "b") >> [](M m) -> UOp {
    auto& d = m.ctx<const std::unordered_map<UOp, UOp>>();
    for (auto& r : m["b"].ranges()) if (d.contains(r)) return UOp();
    return bottom_up_gate();
  }};
  return src.substitute(replaced, &pm_gate_substitute);
}
}  // namespace

const PatternMatcher& pm_const_buffer_folding() {
  static const PatternMatcher pm = pm_mops() + PatternMatcher{
      U(STAGE, {}, {}, {}, "b") >> [](M m) { return cleanup_dead_axes(m["b"]); },
      F(U(INDEX, {}, {}, {}, "idx"), STAGE, "b2", true) >> [](M m) { return remove_noop_bufferize(m["idx"], m["b2"]); },
      F(F(U(INDEX, {}, {U(STAGE)}, {}, "idx", true), NOOP), STAGE, "b2", true) >> [](M m) { return remove_noop_bufferize(m["idx"], m["b2"]); },
      // a staged const is that const everywhere
      F(U(CONST, {}, {}, {}, "c"), STAGE, "b", true) >> [](M m) { return m["b"].const_like_shaped(m["c"].val()); },
      U(INDEX, {}, {U(CONST, {}, {}, {}, "c")}) >> [](M m) { return m["c"]; },
      U(INDEX, {}, {U(AFTER, {}, {}, {}, "after")}, {}, "idx", true) >> [](M m) {
        return after_all_invalid(m["after"]) ? UOp::const_(ConstVal::invalid()) : UOp();
      },
      F(U::cvar("c"), NOOP) >> [](M m) { return m["c"]; },
  };
  return pm;
}

const PatternMatcher& pm_remove_bufferize() {
  static const PatternMatcher pm{
      F(F(V("src"), STAGE, "buf", true), INDEX, "idx", true) >> [](M m) { return remove_bufferize(m["src"], m["buf"], m["idx"]); },
      V("x").store(V("x")) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(END, {}, {U(NOOP, {}, {}, {}, "x")}, {}, {}, true) >> [](M m) { return m["x"]; },
  };
  return pm;
}

// ***** the pass list *****

UOp get_kernel_graph(const UOp& sink) {
  // DEBUG_RANGEIFY=1 prints the graph after each pass
  bool dbg = settings().DEBUG_RANGEIFY > 0;
  auto show = [&](const char* pass, const UOp& g) { if (dbg) std::fprintf(stderr, "*** %s\n%s\n", pass, g.str().c_str()); };
  static const PatternMatcher earliest = pm_mops() + earliest_rewrites();
  UOp tsink = drop_double_copies(graph_rewrite(sink, earliest, RewriteOpts{.bottom_up = true}));
  int64_t copy_slots = 0;
  tsink = graph_rewrite(tsink, pm_copy_to_store(), &copy_slots, true);
  show("copy to store", tsink);

  // movement ops -> ranges
  tsink = run_rangeify(tsink);
  show("rangeify", tsink);

  // cleanups for speed and runability
  static const PatternMatcher cleanup = symbolic() + pm_reduce_simplify() + pm_const_buffer_folding() + pm_remove_bufferize();
  tsink = graph_rewrite(tsink, cleanup);
  show("cleanups", tsink);
  LimitBufsContext lb;
  for (auto& x : tsink.toposort()) if (x.op() == RANGE) lb.range_idx = std::max(lb.range_idx, x.arg().ints()[0] + 1);
  tsink = graph_rewrite(tsink, pm_limit_bufs(), &lb);
  show("limit buffers", tsink);

  // STAGE -> STORE
  int64_t slot = 0;
  for (auto& x : tsink.toposort())
    if (x.op() == BUFFER && x.arg().is<std::shared_ptr<const ParamArg>>() && x.addrspace() == AddrSpace::GLOBAL)
      slot = std::max(slot, x.arg().param().slot + 1);
  static const PatternMatcher add_buffers = pm_add_buffers() + pm_add_param_range_tags();
  tsink = graph_rewrite(tsink, add_buffers, &slot, true);
  show("stage to store", tsink);
  tsink = graph_rewrite(tsink, split_kernels(), nullptr, true);
  show("split kernels", tsink);
  return graph_rewrite(tsink, pm_no_indexing_calls());
}

}  // namespace tg
