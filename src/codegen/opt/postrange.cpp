// tinygrad's codegen/opt/postrange.py (Scheduler, apply_opts) and opt/heuristic.py (hand_coded_optimizations): TC,
// UPCAST, UNROLL, THREAD, LOCAL, GROUP, GROUPTOP, NOLOCALS, PADTO, SWAP, the tensor-core and matvec heuristics.
#include "codegen/opt/postrange.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/opt/search.h"
#include "codegen/simplify.h"
#include "uop/movement.h"
#include "uop/pattern_helpers.h"
#include "util/env.h"
#include "util/settings.h"

namespace tg {

namespace {
using enum Ops;
using pat::axis_type;
using pat::reduce_op;
using pat::tail;
// tinygrad's helpers.colored: s in an ANSI color (a capitalized name is the bright variant)
std::string colored(const std::string& s, const std::string& color) {
  static constexpr const char* names[] = {"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"};
  std::string lower;
  for (char c : color) lower += char(std::tolower(static_cast<unsigned char>(c)));
  int idx = int(std::find(std::begin(names), std::end(names), lower) - std::begin(names));
  bool bright = !color.empty() && std::isupper(static_cast<unsigned char>(color[0]));
  return "\x1b[" + std::to_string(60 * bright + 30 + idx) + "m" + s + "\x1b[0m";
}
int axis_to_pos(AxisType t) {
  switch (t) {
    case AxisType::DEVICE: return -2;
    case AxisType::WEAK: case AxisType::LOOP: return -1;
    case AxisType::THREAD: case AxisType::GLOBAL: return 0;
    case AxisType::WARP: return 1;
    case AxisType::LOCAL: case AxisType::GROUP_REDUCE: return 2;
    case AxisType::UPCAST: return 3;
    case AxisType::REDUCE: return 4;
    case AxisType::UNROLL: return 5;
    default: return 6;
  }
}
const char* axis_color(AxisType t) {
  switch (t) {
    case AxisType::DEVICE: return "green";
    case AxisType::GLOBAL: return "blue";
    case AxisType::THREAD: return "BLUE";
    case AxisType::LOCAL: return "cyan";
    case AxisType::WARP: return "CYAN";
    case AxisType::UPCAST: return "yellow";
    case AxisType::GROUP_REDUCE: return "RED";
    case AxisType::REDUCE: return "red";
    case AxisType::UNROLL: return "magenta";
    default: return "WHITE";
  }
}
void check(bool cond, const std::string& msg) { if (!cond) throw KernelOptError(msg); }
int64_t dim(const UOp& x) { UOp s = x.simplify(); return s.op() == CONST ? s.val().as_int() : s.vmax().as_int(); }
bool is_const_dim(const UOp& rng) { return rng.src(0).op() == CONST || rng.src(0).simplify().op() == CONST; }
}  // namespace

// ***** 1. postrange.py: the Scheduler and apply_opts *****

RendererCaps caps_of(const CStyleLanguage& ren) {
  const Settings& s = settings();
  RendererCaps c;
  c.vector_width = ren.simd_width();
  c.has_local = ren.has_local, c.has_threads = ren.has_threads && s.THREADS != 0, c.has_shared = ren.has_shared;
  c.global_max0 = ren.has_threads ? s.NUM_CPU_THREADS : ren.global_max[0];
  c.shared_max = ren.shared_max;
  c.device = ren.device, c.tensor_cores = ren.tensor_cores;
  return c;
}

Scheduler::Scheduler(UOp a, RendererCaps r) : ast(std::move(a)), ren(r) {
  if (const KernelInfo* ki = kernel_info(ast)) dont_use_locals = ki->dont_use_locals, applied_opts = ki->applied_opts;
  int64_t mx = 0;
  for (auto& x : rngs()) mx = std::max(mx, x.arg().ints()[0]);
  opt_range_ = mx + 1;
}

std::vector<UOp> Scheduler::rngs() const {
  std::vector<UOp> out;
  for (const UOpNode* n : ast.topo_nodes()) {
    if (n->op != RANGE || n == ast.get()) continue;
    if (UOp u(n); u.dtype() != dtypes::void_ && ConstVal(int64_t(0)) < u.vmax() && axis_type(u) != AxisType::DEVICE) out.push_back(u);
  }
  std::stable_sort(out.begin(), out.end(), [](const UOp& a, const UOp& b) {
    int pa = axis_to_pos(axis_type(a)), pb = axis_to_pos(axis_type(b));
    if (pa != pb) return pa < pb;
    const auto &x = a.arg().ints(), &y = b.arg().ints();
    return std::lexicographical_compare(x.begin(), x.end() - 1, y.begin(), y.end() - 1);
  });
  return out;
}
std::vector<int64_t> Scheduler::full_shape() const {
  std::vector<int64_t> out;
  for (auto& r : rngs()) out.push_back(dim(r.src(0)));
  return out;
}
std::vector<AxisType> Scheduler::axis_types() const {
  std::vector<AxisType> out;
  for (auto& r : rngs()) out.push_back(axis_type(r));
  return out;
}
std::vector<int64_t> Scheduler::axes_of(std::initializer_list<AxisType> types) const {
  std::vector<int64_t> out;
  auto at = axis_types();
  for (size_t i = 0; i < at.size(); i++) if (std::find(types.begin(), types.end(), at[i]) != types.end()) out.push_back(int64_t(i));
  return out;
}
std::vector<UOp> Scheduler::ranges_of(std::initializer_list<AxisType> types) const {
  std::vector<UOp> out;
  for (auto& r : rngs()) if (std::find(types.begin(), types.end(), axis_type(r)) != types.end()) out.push_back(r);
  return out;
}
// only int sizes are upcast or unrolled (a symbolic one is a loop to a kernel argument)
std::vector<int64_t> Scheduler::upcastable_dims() const {
  std::vector<int64_t> out, fs = full_shape();
  auto rs = rngs();
  for (auto i : axes_of({AxisType::GLOBAL, AxisType::LOCAL, AxisType::WEAK})) if (fs[i] > 1 && is_const_dim(rs[i])) out.push_back(i);
  return out;
}
std::vector<int64_t> Scheduler::unrollable_dims() const {
  std::vector<int64_t> out, fs = full_shape();
  auto rs = rngs();
  for (auto i : axes_of({AxisType::GROUP_REDUCE, AxisType::REDUCE})) if (fs[i] > 1 && is_const_dim(rs[i])) out.push_back(i);
  return out;
}
std::vector<int64_t> Scheduler::output_shape() const {
  std::vector<int64_t> out, fs = full_shape();
  auto at = axis_types();
  for (size_t i = 0; i < fs.size(); i++)
    out.push_back(at[i] == AxisType::REDUCE || at[i] == AxisType::UNROLL || at[i] == AxisType::GROUP_REDUCE ? 1 : fs[i]);
  return out;
}
int64_t Scheduler::upcast_size() const {
  int64_t n = 1;
  auto fs = full_shape();
  for (auto a : axes_of({AxisType::UPCAST, AxisType::UNROLL})) n *= fs[a];
  return n;
}
std::vector<UOp> Scheduler::bufs() const {
  std::vector<UOp> out;
  for (auto& x : ast.toposort()) if (x.op() == INDEX) out.push_back(x);
  std::reverse(out.begin(), out.end());
  return out;
}
std::vector<UOp> Scheduler::reduceops() const {
  std::vector<UOp> out;
  for (auto& x : ast.toposort()) if (x != ast && x.op() == REDUCE) out.push_back(x);
  return out;
}

std::vector<UOp> Scheduler::output_rngs() const {
  std::vector<UOp> out;
  for (auto& s : ast.src()) {
    if (s.op() != END) continue;
    std::vector<UOp> ends(s.src().begin() + 1, s.src().end());
    for (auto& r : UOp::sink(ends).ranges()) if (axis_type(r) != AxisType::REDUCE) out.push_back(r);
  }
  return out;
}
std::vector<UOp> Scheduler::globalizable_rngs() const {
  std::vector<UOp> ret;
  for (auto& r : output_rngs()) if (axis_type(r) == AxisType::WEAK) ret.push_back(r);
  for (auto& x : ast.toposort())
    if (x.op() == STAGE) {
      auto xr = x.ranges();
      std::erase_if(ret, [&](const UOp& r) { return !has(xr, r); });
    }
  return ret;
}
void Scheduler::convert_loop_to_global() {
  if (!ren.has_local) return;
  std::unordered_map<UOp, UOp> subs;
  for (auto& r : globalizable_rngs()) {
    // ours: a launch's size is fixed when the kernel is lowered, so a loop of symbolic length stays a loop
    if (r.src(0).simplify().op() != CONST) continue;
    Arg::Ints a(r.arg().ints().begin(), r.arg().ints().end());
    a.back() = int64_t(AxisType::GLOBAL);
    subs[r] = r.replace({.arg = Arg(a)});
  }
  if (!subs.empty()) ast = ast.substitute(subs);
}
std::vector<std::string> Scheduler::colors() const {
  std::vector<UOp> out = output_rngs(), glob = globalizable_rngs(), rs = rngs();
  std::vector<std::string> ret;
  for (auto& r : rs) {
    AxisType x = axis_type(r);
    if (dont_use_locals && x == AxisType::GLOBAL) ret.push_back("BLUE");
    else if (!has(out, r) && x == AxisType::WEAK) ret.push_back("BLACK");
    else if (!has(glob, r) && x == AxisType::WEAK) ret.push_back("white");
    else ret.push_back(axis_color(x));
  }
  return ret;
}

std::vector<std::string> Scheduler::shape_str() const {
  std::map<AxisType, int64_t> cnt;
  std::vector<std::string> ret;
  for (AxisType t : axis_types()) ret.push_back(std::string(1, axis_letter(t)) + std::to_string(cnt[t]++));
  return ret;
}
std::vector<int64_t> Scheduler::shape_str_to_axis(const std::vector<std::string>& names) const {
  auto ss = shape_str();
  std::vector<int64_t> ret;
  for (auto& n : names) {
    auto it = std::find(ss.begin(), ss.end(), n);
    check(it != ss.end(), "no axis " + n);
    ret.push_back(int64_t(it - ss.begin()));
  }
  return ret;
}

std::pair<UOp, UOp> Scheduler::shift_to(const UOp& rng, int64_t amount, AxisType new_type, bool top, const UOp& input_new_rng) {
  UOp old_sz = rng.src(0).divides(amount);
  if (!old_sz) throw KernelOptError(std::to_string(amount) + " can't divide " + rng.src(0).render());
  UOp new_rng = input_new_rng ? input_new_rng : UOp::range(amount, opt_range_++, new_type, rng.dtype());
  UOp replaced = rng.replace({.src = std::vector{old_sz}});
  UOp sub = top ? new_rng * old_sz + replaced : replaced * amount + new_rng;
  ast = ast.substitute({{rng, sub}});
  return {replaced, new_rng};
}

int64_t Scheduler::real_axis(OptOps op, std::optional<int64_t> axis) const {
  if (!axis || op == OptOps::TC) return -1;
  auto pick = [&](const std::vector<int64_t>& v) { check(*axis >= 0 && *axis < int64_t(v.size()), "invalid axis"); return v[*axis]; };
  if (op == OptOps::UNROLL) return pick(unrollable_dims());
  if (op == OptOps::GROUP || op == OptOps::GROUPTOP) return pick(axes_of({AxisType::REDUCE}));
  check(*axis < int64_t(rngs().size()), "invalid axis on " + std::to_string(*axis));
  return *axis;
}

std::optional<std::pair<UOp, UOp>> Scheduler::apply_opt(const Opt& opt, bool append_opt) {
  if (opt.op == OptOps::NOLOCALS) {
    for (auto t : axis_types()) check(t != AxisType::WARP && t != AxisType::LOCAL && t != AxisType::GROUP_REDUCE, "no locals can't have locals");
    if (append_opt) applied_opts.push_back(opt);
    dont_use_locals = true;
    return std::nullopt;
  }
  if (opt.op == OptOps::LOCAL || opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP) check(ren.has_local, "locals needed for opt");
  int64_t ra = real_axis(opt.op, opt.axis);
  UOp rng = ra >= 0 ? rngs()[ra] : UOp::make(NOOP, dtypes::void_, {});
  std::optional<std::pair<UOp, UOp>> ret;
  if (opt.op == OptOps::UPCAST || opt.op == OptOps::UNROLL || opt.op == OptOps::THREAD || opt.op == OptOps::LOCAL ||
      opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP) {
    int64_t amt = opt.arg.is<int64_t>() && opt.arg.i() != 0 ? opt.arg.i() : opt.arg.is<ConstVal>() && opt.arg.cval().as_int() != 0
                  ? opt.arg.cval().as_int() : rng.vmax().as_int() + 1;
    AxisType t = axis_type(rng);
    bool grouping = opt.op == OptOps::GROUP || opt.op == OptOps::GROUPTOP;
    auto reds = reduceops();
    if (!reds.empty() && (grouping || (!axes_of({AxisType::GROUP_REDUCE}).empty() && opt.op != OptOps::NOLOCALS && opt.op != OptOps::PADTO))) {
      int64_t upcast_local = 1;
      auto fs = full_shape();
      for (auto a : axes_of({AxisType::UPCAST, AxisType::WARP, AxisType::LOCAL, AxisType::GROUP_REDUCE})) upcast_local *= fs[a];
      int64_t smem = amt * upcast_local * reds[0].dtype().itemsize();
      check(smem <= ren.shared_max, "exceeds maximum shared memory size: needs " + std::to_string(smem) + ", max " + std::to_string(ren.shared_max));
    }
    if (!reds.empty() && grouping) {
      // a GROUP_REDUCE cannot sit inside another reduce
      for (auto& u : ast.toposort()) {
        if (u.op() != REDUCE) continue;
        bool mine = false;
        for (size_t i = 1; i < u.src().size(); i++) mine |= has(u.src(i).ranges(), rng) || u.src(i) == rng;
        if (!mine) continue;
        for (auto& r : u.ranges()) {
          AxisType rt = axis_type(r);
          check(rt != AxisType::REDUCE && rt != AxisType::UNROLL && rt != AxisType::GROUP_REDUCE, "cannot have a GROUP_REDUCE inside another reduce");
        }
        break;
      }
    }
    if (grouping) {
      for (auto& o : applied_opts) check(o.op != OptOps::TC, "no grouping with tensor cores");
      check(!dont_use_locals, "can't use locals");
      check(t == AxisType::REDUCE, "group is for reduce");
    }
    if (opt.op == OptOps::UNROLL) {
      check(amt <= 32, "don't unroll more than 32");
      check(t == AxisType::GROUP_REDUCE || t == AxisType::REDUCE, "unroll is for GROUP_REDUCE/REDUCE");
    }
    if (opt.op == OptOps::UPCAST) {
      check(amt <= 16, "don't upcast more than 16");
      check(t == AxisType::GLOBAL || t == AxisType::LOCAL || t == AxisType::WEAK, "upcast is for GLOBAL/LOCAL/LOOP");
    }
    if (opt.op == OptOps::THREAD) {
      check(ren.has_threads, "target does not support threads");
      check(amt <= ren.global_max0, "too many threads");
      for (auto x : axis_types()) check(x != AxisType::THREAD, "already threaded");
      check(has(globalizable_rngs(), rng), "can't apply range to this dim");
    }
    if (opt.op == OptOps::LOCAL) {
      check(!dont_use_locals, "can't use locals");
      check(t == AxisType::GLOBAL || t == AxisType::WEAK, "local is for globals");
    }
    AxisType nt = opt.op == OptOps::UPCAST ? AxisType::UPCAST : opt.op == OptOps::UNROLL ? AxisType::UNROLL
                : opt.op == OptOps::LOCAL ? AxisType::LOCAL : grouping ? AxisType::GROUP_REDUCE : AxisType::THREAD;
    ret = shift_to(rng, amt, nt, opt.op == OptOps::THREAD || opt.op == OptOps::GROUPTOP);
  } else if (opt.op == OptOps::TC) {
    check(applied_opts.empty(), "tensor core opts must be first");
    check(opt.axis.has_value(), "tensor core opts must have an axis");
    check(opt.arg.is<Arg::Ints>() && opt.arg.ints().size() == 3, "tensor core opts must have valid arg");
    int64_t tc_select = opt.arg.ints()[0], tc_opt = opt.arg.ints()[1], use_tc = opt.arg.ints()[2];
    check(-1 <= tc_select && tc_select < int64_t(ren.tensor_cores.size()), "tensor core opts must have valid tc_select");
    check(0 <= tc_opt && tc_opt <= 2, "tensor core opts must have valid tc_opt");
    check(0 < use_tc && use_tc <= 2, "use_tensor_cores value is not valid");
    auto axes = apply_tc_opt(use_tc, *opt.axis, tc_select, tc_opt);
    check(axes.has_value(), "no tensor core available");
    ret = std::pair{(*axes)[0], (*axes)[1]};  // what is left of the N and M ranges (the heuristic upcasts them)
  } else if (opt.op == OptOps::PADTO) {
    check(rng.src(0).op() == CONST, "only pad const axes");
    check(axis_type(rng) != AxisType::UPCAST && axis_type(rng) != AxisType::UNROLL, "cannot pad upcasted");
    check(axis_type(rng) != AxisType::THREAD, "cannot pad thread");
    int64_t n = rng.vmax().as_int() + 1, a = opt.arg.i(), new_sz = (n + a - 1) / a * a;
    check(n > new_sz / 4, "pad adds more than quadruple the work");
    UOp replaced = UOp::make(RANGE, rng.dtype(), {UOp::const_(new_sz, rng.dtype())}, rng.arg());
    std::unordered_map<UOp, UOp> replaces{{rng, replaced}};
    UOp valid = replaced < n;
    std::vector<UOp> store_targets;
    for (auto& s : ast.toposort()) if (s.op() == STORE) store_targets.push_back(s.src(0));
    for (auto& b : bufs()) {
      if (!b.src(1).get_idx().in_backward_slice_with_self(rng)) continue;
      UOp nb = b.replace({.src = std::vector{b.src(0), b.src(1).get_idx().valid(valid & b.src(1).get_valid())}});
      replaces[b] = has(store_targets, b) ? nb : valid.where(nb, UOp::invalid());
    }
    ast = ast.substitute(replaces);
  } else if (opt.op == OptOps::SWAP) {
    // two output loops trade places (their ids, which order the loops). tinygrad swaps GLOBALs; on a CPU, whose output
    // axes stay loops, the loops (which one streams past which in cache)
    auto rs = rngs();
    check(opt.arg.is<int64_t>() && opt.arg.i() >= 0 && opt.arg.i() < int64_t(rs.size()), "invalid swap axis");
    UOp alt = rs[size_t(opt.arg.i())];
    auto swappable = [&](const UOp& r) { AxisType t = axis_type(r); return t == AxisType::GLOBAL || (!ren.has_local && t == AxisType::WEAK); };
    check(alt != rng && swappable(rng) && swappable(alt), "swap only for globals");
    auto with_id_of = [](const UOp& r, const UOp& from) {
      Arg::Ints a = from.arg().ints();
      a.back() = r.arg().ints().back();
      return r.replace({.arg = Arg(a)});
    };
    UOp held = rng.replace({.tag = Arg(int64_t(1))});  // out of the way while alt takes its id
    ast = ast.substitute({{rng, held}});
    ast = ast.substitute({{alt, with_id_of(alt, rng)}});
    ast = ast.substitute({{held, with_id_of(rng, alt)}});
  } else {
    throw KernelOptError("unsupported opt " + std::string(opt_ops_name(opt.op)) + " on this renderer");
  }
  if (append_opt) applied_opts.push_back(opt);
  return ret;
}

// tinygrad's _apply_tc_opt: the reduce's MUL(A, B) over the tensor core's N (B's own range), M (A's) and K (the reduce)
// ranges, each padded to the core's dims where TC_OPT=2 allows, shaped by its opts: the "l" axes become the warp's
// threads (one WARP range split in bits), the "u" axes upcasts, K log2(K) unrolls of 2. Then A and B are permuted as the
// swizzle says and the reduce becomes a WMMA over the per-thread lanes (a REDUCE of it over what K is left)
std::optional<std::vector<UOp>> Scheduler::apply_tc_opt(int64_t use_tensor_cores, int64_t axis, int64_t tc_select, int64_t opt_level) {
  auto reds = reduceops();
  if (reds.empty()) throw KernelOptError("no reduce ops for TensorCore");
  UOp reduceop = reds[0];
  if (!use_tensor_cores || reduce_op(reduceop) != ADD) return std::nullopt;
  UOp mul = reduceop.src(0).op() == CAST ? reduceop.src(0).src(0) : reduceop.src(0);
  if (mul.op() != MUL) return std::nullopt;
  UOp in0 = mul.src(0), in1 = mul.src(1);
  if (tc_select >= int64_t(ren.tensor_cores.size())) throw KernelOptError("invalid tensor core choice " + std::to_string(tc_select));
  std::vector<TensorCore> cores = tc_select == -1 ? ren.tensor_cores : std::vector{ren.tensor_cores[size_t(tc_select)]};
  auto by_id_desc = [](std::vector<UOp> v) {
    std::stable_sort(v.begin(), v.end(), [](const UOp& a, const UOp& b) { return a.arg().ints()[0] > b.arg().ints()[0]; });
    return v;
  };
  auto only_in = [](const UOp& a, const UOp& b) {
    std::vector<UOp> out, br = b.ranges();
    for (auto& r : a.ranges()) if (!has(br, r)) out.push_back(r);
    return out;
  };
  for (const TensorCore& tc : cores) {
    if (ren.device == "CUDA" && tc.dtype_in == dtypes::float_ && !settings().ALLOW_TF32) continue;
    if (!(tc.dtype_in == in0.dtype() && tc.dtype_in == in1.dtype() && tc.dtype_out == reduceop.dtype())) continue;
    // tensor cores have three ranges: X, Y and the reduce
    std::vector<UOp> in0_ranges = by_id_desc(only_in(in0, in1)), in1_ranges = by_id_desc(only_in(in1, in0));
    std::vector<UOp> red_ranges = by_id_desc(tail(reduceop.src(), 1));
    if (in0_ranges.empty() || in1_ranges.empty() || red_ranges.empty()) continue;
    // the choices are (in1, in0, reduce) in product order, as tinygrad's
    size_t n_choices = in1_ranges.size() * in0_ranges.size() * red_ranges.size();
    if (axis < 0 || size_t(axis) >= n_choices) continue;
    size_t a = size_t(axis);
    std::vector<UOp> axes = {in1_ranges[a / (in0_ranges.size() * red_ranges.size())], in0_ranges[a / red_ranges.size() % in0_ranges.size()],
                             red_ranges[a % red_ranges.size()]};
    for (size_t i = 0; i < 2; i++) check(axis_type(axes[i]) != AxisType::REDUCE, "tensor core X/Y axes can't be REDUCE");
    ast = ast.substitute({{reduceop, reduceop.replace({.tag = Arg("TC")})}});
    try {
      for (size_t i = 0; i < 3; i++) {
        auto rs = rngs();
        int64_t idx = std::find(rs.begin(), rs.end(), axes[i]) - rs.begin();
        if ((axes[i].vmax().as_int() + 1) % tc.dims[i] == 0) continue;
        if (opt_level < 2) throw KernelOptError("tc padding requires opt_level >= 2");
        apply_opt(Opt{OptOps::PADTO, idx, Arg(tc.dims[i])}, false);
        axes[i] = rngs()[size_t(idx)];
      }
    } catch (const KernelOptError&) { continue; }
    // the warp is made whole, in case some of its bits are moved or removed later
    UOp warp = UOp::range(tc.threads, -1, AxisType::WARP);
    std::vector<UOp> ne;
    for (auto& o : tc.opts) {
      size_t d = size_t(o[1] - '0');
      UOp new_range;
      if (o[0] == 'l') {
        std::tie(axes[d], new_range) = shift_to(axes[d], 2, AxisType::LOCAL, false, warp % 2);
        warp = warp / 2;
      } else {
        std::tie(axes[d], new_range) = shift_to(axes[d], 2, AxisType::UPCAST);
      }
      ne.push_back(new_range);
    }
    for (int64_t i = 0; i < tc.reduce_axes(); i++) {
      UOp new_range;
      std::tie(axes[2], new_range) = shift_to(axes[2], 2, AxisType::UNROLL);
      ne.push_back(new_range);
    }
    if (use_tensor_cores != 2) {
      UOp red;
      for (auto& x : ast.toposort()) if (x.op() == REDUCE && x.tag() == Arg("TC")) red = x;
      // A and B with the opt axes permuted as the swizzle says (through tagged copies, so no swap is seen twice)
      std::unordered_map<UOp, UOp> to_tagged;
      std::vector<UOp> tne;
      for (auto& x : ne) tne.push_back(x.replace({.tag = Arg(int64_t(1))})), to_tagged[x] = tne.back();
      UOp tagged = red.substitute(to_tagged);
      UOp m = tagged.src(0).op() == CAST ? tagged.src(0).src(0) : tagged.src(0);
      auto perms = tc.permutes_for_shape_str(tc.base_shape_str());
      std::vector<UOp> srcs;
      for (size_t k = 0; k < 2; k++) {
        std::vector<int64_t> order(perms[k].size());
        for (size_t i = 0; i < order.size(); i++) order[i] = int64_t(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return perms[k][x] < perms[k][y]; });  // argsort
        std::unordered_map<UOp, UOp> back;
        for (size_t i = 0; i < tne.size(); i++) back[tne[i]] = ne[size_t(order[i])];
        srcs.push_back(m.src(k).substitute(back));
      }
      // the reduce and upcast axes of the tensor core, as range ids
      std::vector<std::string> rnames;
      for (int64_t i = 0; i < tc.reduce_axes(); i++) rnames.push_back("r" + std::to_string(i));
      std::vector<int64_t> tc_reduce_axes = shape_str_to_axis(rnames), base_upcast = shape_str_to_axis(tc.base_upcast_axes());
      auto rs = rngs();
      std::array<WmmaArg::Axes, 3> up;
      for (size_t i = 0; i < 3; i++)
        for (int64_t j = 0; (int64_t(1) << (j + 1)) <= tc.elements_per_thread[i]; j++)  // log2(elements) of them
          up[i].push_back({rs[size_t(base_upcast[size_t(j)])].arg().ints()[0], 2});
      std::array<WmmaArg::Axes, 3> with_missing = up;
      for (auto& v : with_missing)
        for (size_t k = 0; k < 2; k++)
          for (auto& [rn, _] : up[k])
            if (std::none_of(v.begin(), v.end(), [&](auto& p) { return p.first == rn; })) v.push_back({rn, 1});
      std::vector<int64_t> reduce_ids;
      for (auto i : tc_reduce_axes) reduce_ids.push_back(rs[size_t(i)].arg().ints()[0]);
      std::vector<UOp> zeros(size_t(tc.elements_per_thread[2]), UOp::const_(ConstVal(0.0), tc.dtype_out));
      WmmaArg wa;
      wa.dims = tc.dims, wa.dtype_in = srcs[0].dtype(), wa.device = ren.device, wa.threads = tc.threads, wa.upcast_axes = with_missing;
      UOp tc_uop = UOp::make(WMMA, tc.dtype_out, {srcs[0], srcs[1], UOp::stack(zeros)}, make_arg(std::move(wa)));
      // the reduce ranges the tensor core does not take stay a REDUCE around it
      std::vector<UOp> reduce_ranges;
      for (auto& x : UOp::sink(tail(red.src(), 1)).toposort())
        if (x.op() == RANGE && !has(reduce_ids, x.arg().ints()[0])) reduce_ranges.push_back(x);
      if (!reduce_ranges.empty()) tc_uop = UOp::make(REDUCE, tc_uop.dtype(), pat::cat({tc_uop}, reduce_ranges), Arg(Arg::Ints{int64_t(ADD), 0}));
      ast = ast.substitute({{red, tc_uop}});
    }
    tensor_core = tc;
    return axes;
  }
  return std::nullopt;
}

UOp Scheduler::get_optimized_ast(std::optional<std::string> name_override) {
  std::string name;
  if (name_override) name = *name_override;
  else {
    name = reduceops().empty() ? "E" : "r";
    auto rs = rngs();
    auto cs = colors();
    for (size_t i = 0; i < rs.size(); i++) name += colored("_", "BLACK") + colored(rs[i].src(0).render(), cs[i]);
  }
  ast = graph_rewrite(ast, pm_flatten_range());
  KernelInfo ki;
  ki.name = name, ki.applied_opts = applied_opts, ki.dont_use_locals = dont_use_locals;
  return ast.replace({.arg = make_arg(std::move(ki)), .tag = Arg(int64_t(1))});
}

// ***** 2. heuristic.py (the parts a renderer without locals or tensor cores uses) *****

namespace {
// the constant stride of `rng` in an index: 0 when the index does not depend on it, nullopt when not a plain multiple
std::optional<int64_t> stride_in(const UOp& idx, const UOp& rng) {
  if (!idx.in_backward_slice_with_self(rng)) return 0;
  int64_t s = 0;
  for (auto& c : idx.split_uop(ADD)) {
    if (c == rng) s += 1;
    else if (c.op() == MUL && c.src(0) == rng && c.src(1).op() == CONST) s += c.src(1).val().as_int();
    else if (c.in_backward_slice_with_self(rng)) return std::nullopt;
  }
  return s;
}

// whether an index reads `rng` only in whole blocks of `lanes` (rng / c, c a multiple of lanes: attention's head in
// softmax @ v's output axis of heads x head dims), so that it is one value across an aligned vector of lanes
bool lane_invariant(const UOp& idx, const UOp& rng, int64_t lanes) {
  for (auto& c : idx.split_uop(ADD)) {
    if (!c.in_backward_slice_with_self(rng)) continue;
    UOp d = OpSet{MUL, SHL}.has(c.op()) && c.src(1).op() == CONST ? c.src(0) : c;
    if (!OpSet{CDIV, FLOORDIV}.has(d.op()) || d.src(0) != rng || d.src(1).op() != CONST || d.src(1).val().as_int() % lanes != 0) return false;
  }
  return true;
}

// the kernel's indexed buffers that are read, not stored to
std::vector<UOp> input_bufs(const Scheduler& k) {
  std::vector<UOp> stored, loads;
  for (auto& u : k.ast.toposort()) if (u.op() == STORE) stored.push_back(u.src(0));
  for (auto& b : k.bufs()) if (!has(stored, b)) loads.push_back(b);
  return loads;
}

// the inputs of the kernel's sum: those that move along a reduce axis (an epilogue's input, or a factor constant
// along the reduce such as a fused RMSNorm's per-row scale, is none)
std::vector<UOp> sum_operands(const Scheduler& k) {
  auto rs = k.rngs();
  auto reds = k.axes_of({AxisType::REDUCE, AxisType::UNROLL});
  std::vector<UOp> out;
  for (auto& b : input_bufs(k))
    if (std::any_of(reds.begin(), reds.end(), [&](int64_t a) { return stride_in(b.src(1).get_idx(), rs[size_t(a)]) != 0; })) out.push_back(b);
  return out;
}

// the output ranges that a load's gate compares with a reduce range (a padded convolution's window over the borders)
std::vector<UOp> window_axes(const Scheduler& k) {
  std::vector<UOp> out;
  for (auto& u : k.ast.toposort()) {
    UOp g = u.op() == WHERE ? u.src(0) : u.op() == INDEX && u.src().size() > 1 ? u.src(1).get_valid() : UOp();
    if (!g) continue;
    for (auto& c : g.split_uop(AND)) {
      auto cr = c.ranges();
      if (std::none_of(cr.begin(), cr.end(), [](const UOp& r) { return axis_type(r) == AxisType::REDUCE; })) continue;
      for (auto& r : cr) if (axis_type(r) != AxisType::REDUCE && !has(out, r)) out.push_back(r);
    }
  }
  return out;
}

// the bytes an input's index reaches over the kernel's loops
int64_t footprint(const Scheduler& k, const UOp& b) {
  auto fs = k.full_shape();
  auto rs = k.rngs();
  int64_t n = b.dtype().itemsize();
  for (size_t i = 0; i < rs.size(); i++) if (stride_in(b.src(1).get_idx(), rs[i]) != 0) n *= fs[i];
  return n;
}

// A register-tiled kernel whose vector operand (B's panels) is past half the L2 cache (more than 1 MiB, which A's rows and
// the output share it with: a block's qkv projection, 1.7 MiB of panels): the loop over B's
// blocks goes outside the loops over the other operands' (A's rows) where that streams fewer bytes: B once per block of
// A's rows (the output's order, as the GEMM's (M, N) store gives) against A once per block of B. The prompt's 128 x 768
// @ 768 x 2048 (6 MiB of panels, 16 blocks of rows) ran at 80 GFLOPS, not 145; a block's MLP down projection 1024 x 1536
// @ 1536 x 384 (2.3 MiB, 128 blocks of rows) likewise. (An epilogue's inputs, read once per output, do not count.)
void panels_outside(Scheduler& k, const UOp& lanes) {
  auto rs = k.rngs();
  auto fs = k.full_shape();
  auto loops = k.axes_of({AxisType::WEAK});
  auto moves = [&](const UOp& b, int64_t a) { return stride_in(b.src(1).get_idx(), rs[size_t(a)]) != 0; };
  std::vector<UOp> ops = sum_operands(k);
  auto vb = std::find_if(ops.begin(), ops.end(), [&](const UOp& b) { return stride_in(b.src(1).get_idx(), lanes) == 1; });  // B
  int64_t b_bytes = vb == ops.end() ? 0 : footprint(k, *vb);
  if (b_bytes <= (int64_t(1) << 20) || loops.size() < 2 || moves(*vb, loops[0])) return;
  auto others_move = [&](int64_t a) { return std::any_of(ops.begin(), ops.end(), [&](const UOp& b) { return b != *vb && moves(b, a); }); };
  int64_t a_blocks = 1, b_blocks = 1, a_bytes = 0, swap_with = -1;
  for (auto a : loops) {
    if (others_move(a) && !moves(*vb, a)) a_blocks *= fs[size_t(a)];
    if (moves(*vb, a) && !others_move(a)) b_blocks *= fs[size_t(a)], swap_with = swap_with < 0 ? a : swap_with;
  }
  for (auto& b : ops) if (b != *vb) a_bytes += footprint(k, b);
  if (swap_with >= 0 && a_bytes * b_blocks < b_bytes * a_blocks) k.apply_opt(Opt{OptOps::SWAP, loops[0], Arg(swap_with)});
}

// CPU reduces: SIMD lanes on an output axis that one float input reads contiguously and another broadcasts (a matmul's
// N, a convolution's output channels with the weights stored channel-last), then a row of accumulators on an axis only
// the broadcast input moves along. That is a GEMM micro-kernel: one vector load and N broadcasts per N vector FMAs,
// which clang's SLP vectorizer makes of the scalar code once the accumulators load and store as vectors
// (memory_coalescing folds them): 2-4x the GFLOPS of tinygrad's heuristic on the main job's convolutions. A big kernel
// gets two vectors of lanes where the axis has them (a row of the tile: 2 loads, then each broadcast feeds 2 FMAs) and
// as many rows as the vector registers hold beside a row's loads and a broadcast: up to 14 on AVX-512's 32 zmm (8 for
// a power-of-two M), 6 on AVX2's 16 ymm; accumulators past that spill to the stack every step of the reduce. A smaller
// one gets one vector and up to rows_cap rows.
bool simd_upcast(Scheduler& k, int64_t width, bool big, int64_t rows_cap) {
  int64_t regs = width >= 16 ? 32 : 16;
  std::vector<UOp> loads = input_bufs(k), window = window_axes(k), operands = sum_operands(k);  // indices of the inputs
  auto fs = k.full_shape();
  auto rs = k.rngs();
  auto ups = k.upcastable_dims();
  for (auto a : ups) {
    int64_t lanes = fs[a] % width == 0 ? width : fs[a] % 8 == 0 ? 8 : 0;  // a vector, else a half one
    if (lanes == 0) continue;
    int64_t vecs = big && lanes == width && fs[a] % (2 * width) == 0 ? 2 : 1;
    for (auto& vb : loads) {
      UOp vidx = vb.src(1).get_idx();
      if (vb.dtype() != dtypes::float32 || stride_in(vidx, rs[a]) != 1 || !has(operands, vb)) continue;  // (B is an operand of the sum)
      // the rows: axes the broadcast operand moves along, smallest stride first (neighbouring rows share cache lines),
      // until 8 rows keep both FMA units busy; not stride 1, where clang's SLP vectorizer would pair the rows' loads
      // an axis a window's gate reads (a padded convolution's output rows) comes after the others: a loop, it lets
      // pm_clip_reduce_gates clip the window's ranges to the input
      std::vector<std::tuple<bool, int64_t, int64_t>> cands;  // (gates a window, stride, axis)
      int64_t nvec = vecs;  // one vector where the broadcast operand changes within two
      std::vector<UOp> bcast;
      for (auto& bb : loads) {
        UOp bidx = bb.src(1).get_idx();
        if (stride_in(bidx, rs[a]) != 0 && !lane_invariant(bidx, rs[a], lanes)) continue;
        if (!lane_invariant(bidx, rs[a], lanes * nvec)) nvec = 1;
        bcast.push_back(bidx);
        for (auto b : ups)
          if (std::optional<int64_t> st = stride_in(bidx, rs[b]); b != a && st && *st > 1 && stride_in(vidx, rs[b]) == 0)
            cands.push_back({has(window, rs[b]), *st, b});
      }
      // three vectors where two do not fit (a head of 48 on AVX-512: softmax @ v's softmax changes every 48 lanes), so
      // a step of the reduce is 3 loads and 8 broadcasts for 24 FMAs, not 1 and 8 for 8
      if (nvec == 1 && big && lanes == width && fs[a] % (3 * width) == 0 &&
          std::all_of(bcast.begin(), bcast.end(), [&](const UOp& i) { return lane_invariant(i, rs[a], 3 * lanes); }))
        nvec = 3;
      int64_t max_rows = big ? std::min<int64_t>(16, (regs - nvec - 2) / nvec) : rows_cap;
      std::sort(cands.begin(), cands.end());
      std::vector<std::pair<UOp, int64_t>> picks;
      int64_t rows = 1;
      for (auto [_, st, b] : cands) {
        if (rows >= 8 || std::any_of(picks.begin(), picks.end(), [&](auto& p) { return p.first == rs[b]; })) continue;
        for (int64_t amt = std::min(max_rows / rows, fs[b]); amt > 1; amt--)
          if (fs[b] % amt == 0) { picks.push_back({rs[b], amt}), rows *= amt; break; }
      }
      if (picks.empty()) continue;
      try {
        Scheduler t = k;
        UOp lane_rng = rs[a];
        auto upcast = [&](const UOp& rng, int64_t amt) {
          auto now = t.rngs();
          t.apply_opt(Opt{OptOps::UPCAST, int64_t(std::find(now.begin(), now.end(), rng) - now.begin()), Arg(amt)});
        };
        // first: the expander puts the first opt's axis innermost (build_range_map); the second vector's axis next
        auto rest = t.apply_opt(Opt{OptOps::UPCAST, int64_t(std::find(rs.begin(), rs.end(), lane_rng) - rs.begin()), Arg(lanes)});
        if (nvec > 1) upcast(rest->first, nvec);
        for (auto& [rng, amt] : picks) upcast(rng, amt);
        panels_outside(t, rest->second);
        k = t;
        return true;
      } catch (const KernelOptError&) {}  // a tile over the opts' limits: the heuristic's upcasts instead
    }
  }
  return false;
}

// CPU reduces along a strided axis (a column sum, the first kernel of a split whole reduce): every input is contiguous
// along one output axis, which gets SIMD lanes and then as many vectors as make 64 columns (8 ymm or 4 zmm
// accumulators: several adds in flight), so each step of the reduce loads whole vectors of one row into accumulators
// held in registers, where the upcasts below give 4 scalar chains and read each row a few floats at a time
bool column_reduce(Scheduler& k) {
  if (k.ren.has_local || k.ren.vector_width == 0 || k.reduceops().size() != 1 || k.upcasted()) return false;
  std::vector<UOp> loads = input_bufs(k);
  auto fs = k.full_shape();
  auto rs = k.rngs();
  auto red = k.ranges_of({AxisType::REDUCE});
  if (loads.empty() || red.empty()) return false;
  for (auto a : k.upcastable_dims()) {
    int64_t lanes = fs[a] % k.ren.vector_width == 0 ? k.ren.vector_width : fs[a] % 8 == 0 ? 8 : 0, vecs = 64 / std::max<int64_t>(lanes, 1);
    bool columns = lanes > 0 && std::all_of(loads.begin(), loads.end(), [&](const UOp& b) {
      UOp idx = b.src(1).get_idx();
      return b.dtype() == dtypes::float32 && stride_in(idx, rs[a]) == 1 &&
             std::all_of(red.begin(), red.end(), [&](const UOp& r) { auto s = stride_in(idx, r); return s && *s != 1; });
    });
    if (!columns) continue;
    while (fs[a] % (lanes * vecs) != 0) vecs /= 2;
    try {
      Scheduler t = k;
      auto rest = t.apply_opt(Opt{OptOps::UPCAST, a, Arg(lanes)});
      if (vecs > 1) {
        auto now = t.rngs();
        t.apply_opt(Opt{OptOps::UPCAST, int64_t(std::find(now.begin(), now.end(), rest->first) - now.begin()), Arg(vecs)});
      }
      k = t;
      return true;
    } catch (const KernelOptError&) { return false; }
  }
  return false;
}

// CPU copies whose input is stored in another order than the output (a transpose, the packed GEMM's B panels): in the
// output's order each step reads a few elements from a row far from the last one (B's rows 16 KiB apart at N=4096: a
// new page per step, 1-2 GB/s). Vector lanes on the output's contiguous axis, then the input's next stored axis as
// rows of the tile, so each step reads whole cache lines (up to 1 KiB) in the input's order and writes a few streams.
// The copied value may be an expression of the loads (a cast, a dequantization: float16 or Q4_K weights to the GEMM's
// float32 panels) of inputs read across the output's lanes or along them (a vector load: Q4_K's d * scale stored along
// W's rows for the prompt's panels, llm/ggml_dot.cpp): the rows are an axis along which each input is contiguous or
// constant (a block's scale), so the expression is computed once per element, on whole rows
bool copy_tile(Scheduler& k) {
  if (k.ren.has_local || k.ren.vector_width == 0 || !k.reduceops().empty()) return false;
  std::optional<UOp> st;
  for (auto& u : k.ast.toposort())
    if (u.op() == STORE) {
      if (st) return false;
      st = u;
    }
  std::vector<UOp> loads = input_bufs(k);
  if (!st || loads.empty()) return false;
  UOp oidx = st->src(0).src(1).get_idx();
  auto fs = k.full_shape();
  auto rs = k.rngs();
  std::optional<int64_t> oa;
  for (auto a : k.upcastable_dims()) if (stride_in(oidx, rs[a]) == 1) oa = a;
  if (!oa || prod(fs) < (int64_t(1) << 14)) return false;
  // one input read along the output's lanes too (B's panels from B): rows are its next axis, `run` elements on
  UOp v = st->src(1);
  bool plain = v.op() == LOAD || v.op() == INDEX;
  if (plain && loads.size() != 1) return false;
  int64_t item = 1;
  for (auto& b : loads) item = std::max<int64_t>(item, b.dtype().itemsize());
  int64_t run = plain && stride_in(loads[0].src(1).get_idx(), rs[*oa]) == 1 ? fs[*oa] : 1;
  for (auto a : k.upcastable_dims()) {
    if (a == *oa) continue;
    bool rows = true, any = false;
    for (auto& b : loads) {
      std::optional<int64_t> s = stride_in(b.src(1).get_idx(), rs[a]);
      rows &= s == run || (!plain && s == 0);
      any |= s == run;
    }
    if (!rows || !any || (run > 1 && stride_in(oidx, rs[a]) == run)) continue;
    int64_t lanes = 0, t = 0;
    for (int64_t l : {k.ren.vector_width, int64_t(8), int64_t(4)}) if (!lanes && fs[*oa] % l == 0) lanes = l;
    // (at most 256 elements a step with the masked axes upcast before: Q4_K's scales are a cat of two halves)
    for (int64_t x : {16, 8, 4, 2}) if (!t && fs[a] % x == 0 && run * x * item <= 1024 && k.upcast_size() * lanes * x <= 256) t = x;
    if (!lanes || !t) return false;
    try {
      Scheduler c = k;
      c.apply_opt(Opt{OptOps::UPCAST, *oa, Arg(lanes)});  // first: innermost
      auto now = c.rngs();
      c.apply_opt(Opt{OptOps::UPCAST, int64_t(std::find(now.begin(), now.end(), rs[a]) - now.begin()), Arg(t)});
      k = c;
      return true;
    } catch (const KernelOptError&) { return false; }
  }
  return false;
}

// matvec_lanes' GEMM: the inputs of the sum are two operands read along K (x and W of x @ W^T), each moving along output
// axes of its own. The bigger operand's loops go outside the other's (SWAPs), then a block of the smaller one's rows
// (up to 8) by as many of the bigger one's as the accumulator registers hold (16 zmm, 8 ymm) is upcast. False where
// the inputs are not two such operands.
bool two_operand_rows(Scheduler& t, const UOp& lane) {
  auto rs = t.rngs();
  auto ups = t.upcastable_dims();
  auto moves = [&](const UOp& b, int64_t a) { return stride_in(b.src(1).get_idx(), rs[size_t(a)]) != 0; };
  std::vector<int> side(ups.size(), -1);  // per output axis, the operand moving along it (inputs sharing an axis: one)
  std::array<int64_t, 2> bytes{}, along_k{};
  int n = 0;
  for (auto& b : sum_operands(t)) {
    int s = -1;
    for (size_t j = 0; j < ups.size(); j++)
      if (moves(b, ups[j]) && side[j] >= 0) {
        if (s >= 0 && s != side[j]) return false;
        s = side[j];
      }
    if (s < 0 && std::none_of(ups.begin(), ups.end(), [&](int64_t a) { return moves(b, a); })) continue;  // (a scale along K)
    if (s < 0 && (s = n++) > 1) return false;
    for (size_t j = 0; j < ups.size(); j++) if (moves(b, ups[j])) side[j] = s;
    bytes[size_t(s)] += footprint(t, b), along_k[size_t(s)] += stride_in(b.src(1).get_idx(), lane) == 1;
  }
  if (n != 2 || !along_k[0] || !along_k[1]) return false;
  int big = bytes[1] > bytes[0];
  for (size_t i = 0; i < ups.size(); i++)  // the bigger operand's loops outermost
    for (size_t j = i + 1; side[i] == 1 - big && j < ups.size(); j++)
      if (side[j] == big) t.apply_opt(Opt{OptOps::SWAP, ups[i], Arg(ups[j])}), std::swap(side[i], side[j]);
  auto fs = t.full_shape();
  int64_t pb = -1, ps = -1;  // the innermost loop of each
  for (size_t j = 0; j < ups.size(); j++) {
    if (side[j] == big) pb = ups[j];
    else if (side[j] == 1 - big) ps = ups[j];
  }
  if (pb < 0 || ps < 0) return false;
  int64_t acc = t.ren.vector_width >= 16 ? 16 : 8, nb = fs[size_t(pb)], ns = fs[size_t(ps)];
  int64_t us = ns <= 8 ? ns : ns % 8 == 0 ? 8 : ns % 4 == 0 ? 4 : ns % 2 == 0 ? 2 : 1, ub = 1;
  while (ub * 2 * us <= acc && nb % (ub * 2) == 0) ub *= 2;
  UOp small = t.rngs()[size_t(ps)];
  if (ub > 1) t.apply_opt(Opt{OptOps::UPCAST, pb, Arg(ub)});
  auto now = t.rngs();
  if (us > 1) t.apply_opt(Opt{OptOps::UPCAST, int64_t(std::find(now.begin(), now.end(), small) - now.begin()), Arg(us)});
  return true;
}

// CPU matrix-vector products (decode's linears: one weight row per output, read along the reduce axis K): a vector
// register's lanes along K (8 or 16; 8 where K has no multiple of 16), each lane its own accumulator, by up to 8 rows. A
// step loads a vector of each row and of the vector and does one vector FMA per row (pm_vector_lanes keeps the lanes
// vectors); the lanes are summed once, after the loop. (Unrolled the usual way, each step's products are summed into
// one scalar accumulator per row: a horizontal add per row per step.) Returns the lane ranges for split_lanes; none
// where the kernel is no matrix-vector product. Not where the summed values need a transcendental (a softmax's sum
// of exp, which its causal mask selects per lane: pm_vector_lanes vectorizes selects by one shared condition only, and
// each lane's chain stays scalar; a prompt's sum of exp(scores - max) ran 4x slower than with the row upcasts below). A GEMM with a handful of columns
// (an MLP's 10-way output layer: N of 16 or fewer, no vector lanes along it) is a matrix-vector product per row of A:
// its N weight rows are all upcast (an L1-sized block read again for each of A's rows, which are the outer loop). A GEMM
// whose operands are both read along K (x @ W^T of a short prompt, where packed_dot leaves W in place: under 64 rows
// of x) gets the lanes too, with a block of the smaller operand's rows (up to 8) by as many of the bigger one's as the
// registers hold, the bigger operand's loop outermost: each block of its rows (W's, float16 or quantized) streams in
// once and is read from L1 by every block of the other's. (Without lanes it ran at 3-12 GFLOPS: no operand is
// contiguous along an output axis, so simd_upcast has no tile.)
std::vector<UOp> matvec_lanes(Scheduler& k) {
  auto red = k.reduceops();
  auto ud = k.unrollable_dims(), ups = k.upcastable_dims();
  auto fs = k.full_shape();
  auto rs = k.rngs();
  // the few columns of a skinny GEMM: the output axis of 16 or fewer that is not the last of two
  std::optional<int64_t> few;
  if (ups.size() == 2 && fs[size_t(ups[1])] <= 16 && fs[size_t(ups[0])] > 16) few = ups[1];
  bool gemm = ups.size() >= 2 && !few;
  if (red.size() != 1 || reduce_op(red[0]) != ADD || !red[0].dtype().is_float() || ud.empty() || (ups.size() != 1 && !few && !gemm)) return {};
  for (auto& u : red[0].src(0).toposort())
    if (OpSet{EXP2, LOG2, SIN, SQRT, RECIPROCAL}.has(u.op())) return {};
  int64_t ka = ud.back(), row = few ? *few : ups[0];
  // K of one register is no loop, unless an outer reduce axis loops over such registers (ggml_dot's blocks of lanes)
  bool blocks = ud.size() > 1;
  int64_t lanes = fs[ka] % k.ren.vector_width == 0 && (fs[ka] > k.ren.vector_width || blocks) ? k.ren.vector_width : 8;  // a register, else half
  if (fs[ka] % lanes != 0 || (fs[ka] == lanes && !blocks)) return {};
  // several output axes and no two operands (a batch norm's per-channel sums of (b, c, h, w) over h, w): the rows along
  // the axis an input read along K moves along with the smallest stride
  if (gemm) {
    std::optional<int64_t> best;
    for (auto& b : input_bufs(k))
      if (UOp idx = b.src(1).get_idx(); stride_in(idx, rs[ka]) == 1)
        for (auto a : ups)
          if (auto st = stride_in(idx, rs[size_t(a)]); st && *st > 0 && (!best || *st < *best)) best = *st, row = a;
  }
  bool weight = false;  // an input that reads along K and moves along the rows
  // half a register of lanes that an outer reduce axis of 2 continues in the weight (Q4_K's ggml_dot: 8 words of a
  // 32-byte chunk, the next chunk 8 words on): both unrolled, a register of lanes
  bool pair = lanes == fs[ka] && blocks && lanes * 2 == k.ren.vector_width && fs[ud[ud.size() - 2]] == 2;
  for (auto& b : input_bufs(k)) {
    UOp idx = b.src(1).get_idx();
    std::optional<int64_t> s = stride_in(idx, rs[ka]), sr = stride_in(idx, rs[row]);
    if (!s || (*s != 0 && *s != 1)) return {};  // lanes are consecutive elements or one broadcast element
    bool w = *s == 1 && sr && *sr != 0;
    weight |= w;
    if (w && pair)
      if (std::optional<int64_t> sg = stride_in(idx, rs[ud[ud.size() - 2]]); sg != std::optional<int64_t>(lanes) && sg != std::optional<int64_t>(0))
        pair = false;  // (or repeats: Q4_K's mins, the same 8 lanes in both halves)
  }
  try {
    Scheduler t = k;
    // first: the expander puts the first opt's axis innermost, so a row's lanes are consecutive in the accumulators
    std::vector<UOp> lane{t.apply_opt(Opt{OptOps::UNROLL, int64_t(ud.size()) - 1, Arg(lanes)})->second};
    auto unroll_2 = [&](const UOp& rng) {  // the reduce range rng (of k), wholly unrolled: its unrolled range
      auto now = t.rngs();
      auto ud_now = t.unrollable_dims();
      for (size_t i = 0; i < ud_now.size(); i++)
        if (now[size_t(ud_now[i])] == rng) return t.apply_opt(Opt{OptOps::UNROLL, int64_t(i), Arg(int64_t(2))})->second;
      return UOp();
    };
    if (pair) {
      if (UOp u = unroll_2(rs[ud[ud.size() - 2]])) lane.push_back(u);
      // and an outer axis of 2 above the pair (Q4_K's two halves of a super-block): unrolled, each half's scales are
      // lanes of one load per super-block (118 instructions per 64 weights by 8 rows, 135 with it a loop)
      if (ud.size() >= 3 && fs[ud[ud.size() - 3]] == 2) unroll_2(rs[ud[ud.size() - 3]]);
    }
    Scheduler g = t;
    if (gemm && two_operand_rows(g, lane[0])) t = g;
    else if (!weight) return {};
    else if (few) t.apply_opt(Opt{OptOps::UPCAST, row, Arg(fs[size_t(row)])});
    else
      for (int64_t r : {8, 4, 2})
        if (fs[row] % r == 0) { t.apply_opt(Opt{OptOps::UPCAST, row, Arg(r)}); break; }
    k = t;
    return lane;
  } catch (const KernelOptError&) { return {}; }
}

// REDUCE(x, loops..., lane) -> REDUCE(REDUCE(x, loops...), lane): the inner reduce keeps the lane axis in its
// accumulators, the outer one is the horizontal sum after the loops
void split_lanes(Scheduler& k, const std::vector<UOp>& lanes) {
  for (auto& r : k.ast.toposort()) {
    if (r.op() != REDUCE) continue;
    std::vector<UOp> loops;
    bool mine = false;
    for (auto& x : UOp::sink(tail(r.src(), 1)).toposort())
      if (x.op() == RANGE && has(lanes, x)) mine = true;
      else if (x.op() == RANGE && !has(loops, x)) loops.push_back(x);
    if (!mine) continue;
    k.ast = k.ast.substitute(std::unordered_map<UOp, UOp>{{r, r.src(0).reduce(loops, reduce_op(r)).reduce(lanes, reduce_op(r))}});
    return;
  }
}
}  // namespace

// SIMD CPU elementwise kernels with a float32 transcendental (the softmax's exps, tanh-gelu): the host's lanes on an
// axis every buffer reads and writes contiguously or not at all, so exp2's polynomial runs on whole vector registers,
// where the upcasts below take 4 lanes (a quarter of a zmm) or a strided axis (scalar code): 3x on the block's exps
bool transcendental_lanes(Scheduler& k) {
  int64_t w = k.ren.vector_width;
  if (k.ren.has_local || w == 0 || !k.reduceops().empty() || k.upcasted()) return false;
  auto topo = k.ast.toposort();
  if (std::none_of(topo.begin(), topo.end(), [](const UOp& u) { return OpSet{EXP2, LOG2, SIN}.has(u.op()) && u.dtype() == dtypes::float32; }))
    return false;
  auto fs = k.full_shape();
  auto rs = k.rngs();
  auto ups = k.upcastable_dims();
  for (auto a = ups.rbegin(); a != ups.rend(); ++a) {
    if (fs[size_t(*a)] % w != 0) continue;
    bool lanes = false, ok = true;
    for (auto& b : k.bufs()) {
      std::optional<int64_t> st = stride_in(b.src(1).get_idx(), rs[size_t(*a)]);
      ok &= st == 0 || st == 1, lanes |= st == 1;
    }
    if (!ok || !lanes) continue;
    k.apply_opt(Opt{OptOps::UPCAST, *a, Arg(w)});
    return true;
  }
  return false;
}

Scheduler hand_coded_optimizations(const Scheduler& k0) {
  // tensor cores first (unless TC_OPT >= 1, only on a kernel of one reduce axis): on the first of the 3 axis choices
  // that takes one, N and M are upcast by the largest of 5, 4, 3, 2 that divides them and N made local by 4 or 2
  const Settings& st = settings();
  int64_t tc_opt = std::max<int64_t>(st.TC_OPT, 0);
  if (st.TC > 0 && !k0.ren.tensor_cores.empty() && (k0.axes_of({AxisType::GROUP_REDUCE, AxisType::REDUCE}).size() == 1 || tc_opt >= 1)) {
    for (int64_t axis = 0; axis < 3; axis++) {
      Scheduler tk = k0;
      std::optional<std::pair<UOp, UOp>> r;
      try { r = tk.apply_opt(Opt{OptOps::TC, axis, Arg(Arg::Ints{st.TC_SELECT, tc_opt, st.TC})}); } catch (const KernelOptError&) { continue; }
      std::array<UOp, 2> nm = {r->first, r->second};
      for (size_t d : {1, 0})
        for (int64_t sz : {5, 4, 3, 2}) {
          if (!nm[d].src(0).divides(sz)) continue;
          auto rs = tk.rngs();
          nm[d] = tk.apply_opt(Opt{OptOps::UPCAST, std::find(rs.begin(), rs.end(), nm[d]) - rs.begin(), Arg(sz)})->first;
          break;
        }
      for (int64_t sz : {4, 2}) {
        if (!nm[0].src(0).divides(sz)) continue;
        auto rs = tk.rngs();
        tk.apply_opt(Opt{OptOps::LOCAL, std::find(rs.begin(), rs.end(), nm[0]) - rs.begin(), Arg(sz)});
        break;
      }
      return tk;
    }
  }
  Scheduler k = k0;
  // a matrix-vector product on a GPU (a sum of products of two loads, the reduce range in the first one's index): 8
  // work-items share a row (GROUP), 4 rows per group (LOCAL), 4 rows per work-item (UPCAST); MV_* env as in tinygrad
  int64_t mv_block = getenv_int("MV_BLOCKSIZE", 4), mv_tpr = getenv_int("MV_THREADS_PER_ROW", 8), mv_rpt = getenv_int("MV_ROWS_PER_THREAD", 4);
  auto red = k.reduceops();
  if (k.ren.has_local && k.ren.has_shared && getenv_int("MV", 1) != 0 && (mv_block > 1 || mv_tpr > 1 || mv_rpt > 1) && !red.empty() &&
      Ops(red[0].arg().ints()[0]) == ADD && k.full_shape().size() >= 2 && red[0].src(0).op() == MUL && red[0].src(0).src(0).op() == INDEX &&
      red[0].src(0).src(1).op() == INDEX) {
    UOp idx0 = red[0].src(0).src(0).src(1).get_idx(), idx1 = red[0].src(0).src(1).src(1).get_idx();
    auto rr = k.ranges_of({AxisType::REDUCE});
    if (!rr.empty()) {
      auto terms = idx0.split_uop(ADD), r0 = idx0.ranges(), r1 = idx1.ranges();
      bool in0 = std::find(terms.begin(), terms.end(), rr[0]) != terms.end();
      bool sub = std::all_of(r0.begin(), r0.end(), [&](const UOp& r) { return std::find(r1.begin(), r1.end(), r) != r1.end(); });
      if (in0 && sub)
        for (int64_t g : k.axes_of({AxisType::GLOBAL}))
          if (rr[0].src(0).divides(mv_tpr) && k.full_shape()[size_t(g)] % (mv_block * mv_rpt) == 0) {
            try {
              if (mv_tpr > 1) k.apply_opt(Opt{OptOps::GROUP, 0, Arg(mv_tpr)});
            } catch (const KernelOptError&) {}
            if (mv_block > 1) k.apply_opt(Opt{OptOps::LOCAL, g, Arg(mv_block)});
            if (mv_rpt > 1) k.apply_opt(Opt{OptOps::UPCAST, g, Arg(mv_rpt)});
            return k;
          }
    }
  }
  // a reduce with a small output on a GPU: split it over 16 work-items of a group (GROUPTOP), and stop there
  if (k.ren.has_local) {
    int64_t out = 1;
    for (auto i : k.upcastable_dims()) out *= k.output_shape()[i];
    if (out <= (settings().NOLOCALS ? 240 : 2048))
      for (int64_t axis : {0, 1, 2}) {
        try {
          k.apply_opt(Opt{OptOps::GROUPTOP, axis, Arg(int64_t(16))});
          break;
        } catch (const KernelOptError&) {}
      }
    if (!k.axes_of({AxisType::GROUP_REDUCE}).empty()) return k;
  }
  // upcast small masked axes (from Tensor.stack, pads); in a SIMD CPU reduce kernel, masks the reduce reads (a mask
  // applied to its result, such as attention's causal one on q @ k^T, would take the GEMM's register tile)
  std::set<const UOpNode*> where_gate_rngs;
  auto reds = k.reduceops();
  bool simd_reduce = !k.ren.has_local && k.ren.vector_width > 0 && !reds.empty();
  for (auto& u : (simd_reduce ? UOp::sink(reds) : k.ast).toposort())
    if (u.op() == WHERE) for (auto& r : u.src(0).ranges()) where_gate_rngs.insert(r.get());
  std::vector<int64_t> to_upcast;
  {
    auto fs = k.full_shape();
    auto rs = k.rngs();
    for (auto axis : k.upcastable_dims()) {
      int64_t p = 1;
      for (auto j : to_upcast) p *= fs[j];
      if (fs[axis] <= 7 && where_gate_rngs.count(rs[axis].get()) && p * fs[axis] <= 49) to_upcast.push_back(axis);
    }
  }
  for (auto it = to_upcast.rbegin(); it != to_upcast.rend(); ++it) k.apply_opt(Opt{OptOps::UPCAST, *it, Arg(int64_t(0))});

  if (copy_tile(k)) {
    apply_threads(k);
    return k;
  }
  transcendental_lanes(k);  // the upcasts below may add rows: 4 of a packed GEMM's panels are 512 contiguous bytes

  // (a small kernel gets a small tile, 8 lanes by 4 rows: it runs in microseconds, and a big one costs its codegen
  // more than that; from 256K multiply-adds, a batch-1 convolution's, one vector of the host's lanes by 8 rows: 3x the
  // small tile's 35 GFLOPS)
  int64_t size = prod(k.full_shape());
  bool big = size >= (int64_t(1) << 22), medium = !big && size >= (int64_t(1) << 18);
  bool simd = !k.ren.has_local && k.ren.vector_width > 0 && !k.reduceops().empty() && !k.upcasted() &&
              (simd_upcast(k, big || medium ? k.ren.vector_width : 8, big, medium ? 8 : 4) || column_reduce(k));
  if (!simd && !k.ren.has_local && k.ren.vector_width > 0 && !k.upcasted())
    if (auto lane = matvec_lanes(k); !lane.empty()) {
      apply_threads(k);
      split_lanes(k, lane);
      return k;
    }

  // more upcasts of non reduce axes. A reduce on a CPU with SIMD kernels gets one of 8 even with a small output (a
  // matrix-vector product of a few hundred rows): each upcast row is its own accumulator, where one row's sum is a chain
  // of dependent adds that runs at the adder's latency
  std::set<int64_t> upcasted_axis;
  bool cpu_reduce = !k.ren.has_local && k.ren.vector_width > 0 && !k.reduceops().empty();
  while (true) {
    auto fs = k.full_shape();
    int64_t p = 1;
    for (auto i : k.upcastable_dims()) p *= k.output_shape()[i];
    if (!((p >= 1024 || (cpu_reduce && p >= 64 && upcasted_axis.empty())) && k.upcast_size() < 32)) break;
    std::vector<std::array<int64_t, 4>> xb;
    auto rs = k.rngs();
    auto bufs = k.bufs();
    auto ups = k.ranges_of({AxisType::UPCAST, AxisType::UNROLL});
    // 8 rows: 8 chains of adds in flight, each 4 long per unrolled step; also for a matrix-vector product of any size
    // (one output axis), which streams its matrix once and has no other reuse to tile for
    bool small = cpu_reduce && (p < 1024 || k.upcastable_dims().size() == 1);
    for (auto axis : k.upcastable_dims())
      for (int64_t amt : small && fs[axis] % 8 == 0 ? std::vector<int64_t>{8} : std::vector<int64_t>{3, 4}) {
        if (upcasted_axis.count(axis) || fs[axis] % amt != 0) continue;
        const UOp& rng = rs[axis];
        bool any = false;
        for (auto& b : bufs) {
          UOp idx = b.src(1).get_idx();
          bool all_up = std::all_of(ups.begin(), ups.end(), [&](const UOp& r2) { return idx.in_backward_slice_with_self(r2) && idx != r2; });
          if (!(idx.in_backward_slice_with_self(rng) && idx != rng) && all_up) any = true;
        }
        if (!any) continue;
        int64_t num = 0, sum = 0;
        for (auto& b : bufs) {
          UOp idx = b.src(1).get_idx();
          if (idx.in_backward_slice_with_self(rng) && idx != rng) num++;
          for (auto& c : idx.split_uop(ADD)) {
            if (c == rng) sum++;
            if (c.op() == MUL && c.src(0) == rng && c.src(1).op() == CONST) sum += c.src(1).val().as_int();
            if (c.op() == MUL && c.src(1) == rng && c.src(0).op() == CONST) sum += c.src(0).val().as_int();
          }
        }
        xb.push_back({num, sum, axis, amt});
      }
    if (xb.empty()) break;
    std::sort(xb.begin(), xb.end());
    k.apply_opt(Opt{OptOps::UPCAST, xb[0][2], Arg(xb[0][3])});
    upcasted_axis.insert(xb[0][2]);
  }

  // unroll a small last reduce dim
  try {
    auto ud = k.unrollable_dims();
    if (!simd && !ud.empty() && (k.upcast_size() <= 4 || k.axes_of({AxisType::UNROLL}).empty()) && k.upcast_size() < 64) {
      int64_t s = k.full_shape()[ud.back()];
      if (s <= 32) {
        k.apply_opt(Opt{OptOps::UNROLL, int64_t(ud.size()) - 1, Arg(int64_t(0))});
        ud = k.unrollable_dims();
        if (!ud.empty() && s <= 3 && k.full_shape()[ud.back()] <= 3) k.apply_opt(Opt{OptOps::UNROLL, int64_t(ud.size()) - 1, Arg(int64_t(0))});
      } else if (k.full_shape()[ud.back()] % 4 == 0) {
        k.apply_opt(Opt{OptOps::UNROLL, int64_t(ud.size()) - 1, Arg(int64_t(4))});
      }
    }
  } catch (const KernelOptError&) {}

  // an easy upcast when nothing is upcasted
  if (!k.upcasted() && !k.upcastable_dims().empty() && k.full_shape()[k.upcastable_dims().back()] % 4 == 0)
    k.apply_opt(Opt{OptOps::UPCAST, k.upcastable_dims().back(), Arg(int64_t(4))});

  apply_locals(k);
  apply_threads(k);
  return k;
}

// GPU work-groups: up to three output axes local, expand axes (some buffer does not read along them) first, at most
// 128 work-items
void apply_locals(Scheduler& k) {
  if (!k.ren.has_local) return;
  if (settings().NOLOCALS) {
    k.apply_opt(Opt{OptOps::NOLOCALS, std::nullopt, Arg()});
    return;
  }
  auto rs = k.rngs();
  auto fs = k.full_shape();
  std::vector<std::pair<bool, int64_t>> ranking;
  for (auto axis : k.axes_of({AxisType::GLOBAL, AxisType::WEAK})) {
    if (rs[axis].src(0).op() != CONST) continue;
    bool expand = false;
    for (auto& b : k.bufs()) expand |= !b.src(1).get_idx().in_backward_slice_with_self(rs[axis]);
    ranking.push_back({expand, axis});
  }
  std::sort(ranking.begin(), ranking.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second > b.second; });
  std::vector<std::pair<int64_t, int64_t>> to_local;  // (axis, size)
  for (auto& [_, axis] : ranking) {
    int64_t local_size = 1;
    for (auto& [a, sz] : to_local) local_size *= sz;
    std::vector<int64_t> cands = {16, 8, 4, 3, 2};
    if (axis == 0) cands.insert(cands.begin(), 32);
    for (int64_t x : cands)
      if (fs[axis] % x == 0 && local_size * x <= 128) { to_local.push_back({axis, x}); break; }
  }
  if (to_local.size() > 3) to_local.resize(3);
  std::sort(to_local.begin(), to_local.end());
  int64_t deleted = 0;
  for (auto [axis, sz] : to_local) {
    axis -= deleted;
    bool will_delete = sz == k.full_shape()[axis];
    k.apply_opt(Opt{OptOps::LOCAL, axis, Arg(sz)});
    deleted += will_delete;
  }
}

// about 128K ops per thread, on the first output axis the thread count divides. SIMD kernels also count 64 KiB of
// input per thread as enough: a quantized matvec's iterations are words of 8 weights (a Q4_K 768 x 768 decode matvec,
// 331 KB, is 37K iterations and 30 us on one thread)
void apply_threads(Scheduler& k) {
  if (!k.ren.has_threads) return;
  for (auto& o : k.applied_opts) if (o.op == OptOps::THREAD) return;
  int64_t in_bytes = 0;
  if (k.ren.vector_width) for (auto& b : input_bufs(k)) in_bytes += footprint(k, b);
  for (int64_t threads : {32, 16, 12, 8, 6, 5, 4, 3, 2}) {
    if (threads > k.ren.global_max0 || (prod(k.full_shape()) / (128 << 10) < threads && in_bytes / (64 << 10) < threads)) continue;
    auto fs = k.full_shape();
    auto rs = k.rngs();
    for (auto axis : k.axes_of({AxisType::WEAK})) {
      if (fs[axis] % threads == 0 && is_const_dim(rs[axis])) {
        try { k.apply_opt(Opt{OptOps::THREAD, axis, Arg(threads)}); } catch (const KernelOptError&) {}
        break;
      }
    }
    if (!k.applied_opts.empty() && k.applied_opts.back().op == OptOps::THREAD) break;
  }
}

UOp apply_opts(const UOp& ast, const CStyleLanguage& ren) {
  if (!ast.tag().none()) return ast;
  Scheduler k(ast, caps_of(ren));
  k.convert_loop_to_global();
  const KernelInfo* ki = kernel_info(ast);
  if (ki && ki->opts_to_apply) {
    for (auto& o : *ki->opts_to_apply) k.apply_opt(o);
  } else if (int64_t beam = settings().BEAM; beam >= 1) {
    k = beam_search(k, ren, int(beam));
    apply_threads(k);  // timed on a busy machine, the search can miss that a big kernel wants every core
  } else if (!settings().NOOPT && (!ki || ki->applied_opts.empty())) {
    bool staged = false;
    for (auto& u : ast.toposort()) staged |= u.op() == STAGE;
    if (!staged) k = hand_coded_optimizations(k);
  }
  return k.get_optimized_ast(ki && ki->name != "test" ? std::optional(ki->name) : std::nullopt);
}

}  // namespace tg
