// tinygrad's codegen/__init__.py: 1. the passes' helpers and last matchers, 2. full_rewrite_to_sink (the pass list),
// 3. to_program (linearize, estimates, render). The expander and devectorizer matchers are in expander/devectorizer.cpp.
#include "codegen/pipeline.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_set>

#include "codegen/decomp/op.h"
#include "codegen/decomp/transcendental.h"
#include "codegen/devectorizer.h"
#include "codegen/expander.h"
#include "codegen/gpudims.h"
#include "codegen/late/coalesce.h"
#include "codegen/late/gater.h"
#include "codegen/late/linearizer.h"
#include "codegen/late/prefetch.h"
#include "codegen/opt/postrange.h"
#include "codegen/simplify.h"
#include "uop/movement.h"
#include "uop/nodemap.h"
#include "uop/pattern_helpers.h"
#include "uop/symbolic.h"
#include "uop/weak.h"
#include "util/build_id.h"
#include "util/diskcache.h"
#include "util/env.h"
#include "util/lru.h"
#include "util/sha256.h"

namespace tg {

// ***** 1. the passes' helpers, casted consts and param numbering *****

namespace {
// TRACK_REWRITES=1: the time and result size of each pass, summed over kernels, printed at exit
struct PassStats {
  struct Row { const char* name; double s = 0; int64_t calls = 0, nodes = 0; };
  std::vector<Row> rows;
  void add(const char* name, double s, const UOp& r) {
    auto it = std::find_if(rows.begin(), rows.end(), [&](auto& row) { return row.name == name; });
    if (it == rows.end()) it = rows.insert(it, {name});
    it->s += s, it->calls++, it->nodes += int64_t(r.topo_nodes().size());
  }
  ~PassStats() {
    double total = 0;
    for (auto& r : rows) total += r.s;
    std::printf("%-24s %9s %6s %10s %6s\n", "pass", "ms", "calls", "nodes/call", "%");
    for (auto& r : rows)
      std::printf("%-24s %9.3f %6lld %10.1f %6.1f\n", r.name, r.s * 1e3, (long long)r.calls, double(r.nodes) / double(r.calls), 100 * r.s / total);
    std::printf("%-24s %9.3f\n", "total", total * 1e3);
  }
};
PassStats* pass_stats() {
  if (!settings().TRACK_REWRITES) return nullptr;
  static PassStats stats;
  return &stats;
}
template <class F> UOp tracked(const char* name, F&& f) {
  PassStats* stats = pass_stats();
  if (!stats) return f();
  auto st = std::chrono::steady_clock::now();
  UOp r = f();
  stats->add(name, std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count(), r);
  return r;
}
UOp rewrite(const char* name, const UOp& s, const PatternMatcher& pm, void* ctx = nullptr, bool bottom_up = false, bool walk = false) {
  RewriteOpts o;
  o.ctx = ctx, o.bottom_up = bottom_up, o.walk = walk;
  return tracked(name, [&] { return graph_rewrite(s, pm, o); });
}
// the renderer as ctx: the rules only read it
UOp rewrite(const char* name, const UOp& s, const PatternMatcher& pm, const CStyleLanguage& ren) {
  RewriteOpts o;
  o.ctx = const_cast<CStyleLanguage*>(&ren), o.ctx_read_only = true;
  return tracked(name, [&] { return graph_rewrite(s, pm, o); });
}
OpSet supported_ops(const CStyleLanguage& ren) {
  OpSet s;
  for (auto& [op, _] : ren.code_for_op) s.add(op);
  return s;
}

// every literal spelled as a casted const CAST(dt, CONST(value)); run with walk
const PatternMatcher& pm_casted_consts() {
  static const PatternMatcher pm = PatternMatcher{
      UPat(Ops::CONST, {}, {}, {}, "c") >> [](M m) {
        const UOp& c = m["c"];
        if (c.dtype().is_weak() || c.dtype() == dtypes::void_) return UOp();
        return UOp::make(Ops::CAST, c.dtype(), {UOp::const_(c.val())}, Arg(c.dtype()));
      },
  }.pure();
  return pm;
}

// unnumbered variable PARAMs get the next slots (ctx: int64_t next slot); run with walk
const PatternMatcher& pm_number_params() {
  static const PatternMatcher pm{
      UPat(Ops::PARAM, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        if (x.arg().param().slot != -1) return UOp();
        ParamArg pa = x.arg().param();
        pa.slot = m.ctx<int64_t>()++;
        return x.replace({.arg = Arg(pa)});
      },
  };
  return pm;
}

// tinygrad's pm_implicit_barriers: a load from LOCAL memory after stores to it (through AFTER) waits at a work-group
// barrier, and a loop that stores to and loads from a LOCAL buffer ends each iteration with one
bool is_local_store(const UOp& x) { return x.op() == Ops::STORE && x.addrspace() == AddrSpace::LOCAL; }
const PatternMatcher& pm_implicit_barriers() {
  static const PatternMatcher pm{
      UPat(Ops::AFTER, {}, {}, {}, "after", true) >> [](M m) -> UOp {
        const UOp& after = m["after"];
        if (after.addrspace() != AddrSpace::LOCAL) return {};
        std::vector<UOp> deps(after.src().begin() + 1, after.src().end());
        bool stored = false;
        for (auto& x : UOp::sink(deps).toposort([](const UOp& x) { return x.op() != Ops::BARRIER; })) stored |= is_local_store(x);
        if (!stored) return {};
        return after.src(0).after({UOp::make(Ops::BARRIER, dtypes::void_, deps)});
      },
      UPat(Ops::END, {}, {}, {}, "end", true) >> [](M m) -> UOp {
        const UOp& end = m["end"];
        std::vector<UOp> rngs;
        for (size_t i = 1; i < end.src().size(); i++) {
          const UOp& r = end.src(i);
          if (r.op() != Ops::RANGE || r.vmax().as_int() <= 0) continue;
          AxisType t = AxisType(r.arg().ints().back());
          if (t == AxisType::REDUCE || t == AxisType::WEAK || t == AxisType::LOOP) rngs.push_back(r);
        }
        if (rngs.empty() || end.src(0).op() == Ops::BARRIER) return {};
        std::vector<UOp> sl = end.src(0).toposort(), store_bufs, loads;
        for (auto& x : sl) {
          if (!is_local_store(x)) continue;
          auto xr = x.ranges();
          if (std::any_of(rngs.begin(), rngs.end(), [&](const UOp& r) { return std::find(xr.begin(), xr.end(), r) != xr.end(); }))
            store_bufs.push_back(x.src(0).buf_uop());
        }
        if (store_bufs.empty()) return {};
        for (auto& x : sl)
          if (x.op() == Ops::LOAD && std::find(store_bufs.begin(), store_bufs.end(), x.src(0).buf_uop()) != store_bufs.end()) loads.push_back(x);
        if (loads.empty()) return {};
        std::vector<UOp> src{UOp::make(Ops::BARRIER, dtypes::void_, pat::cat({end.src(0)}, loads))};
        for (size_t i = 1; i < end.src().size(); i++) src.push_back(end.src(i));
        return end.replace({.src = src});
      },
  };
  return pm;
}

struct DecompMatchers { PatternMatcher early, late, final; };
const DecompMatchers& decomp_matchers(OpSet ops, bool disable_fast_idiv, bool force_transcendental, const PatternMatcher* extra) {
  static std::mutex mu;
  static std::map<std::tuple<uint64_t, uint64_t, bool, bool, const PatternMatcher*>, std::unique_ptr<DecompMatchers>> cache;
  std::lock_guard<std::mutex> l(mu);
  auto& e = cache[{ops.w[0], ops.w[1], disable_fast_idiv, force_transcendental, extra}];
  if (!e) {
    PatternMatcher early = symbolic_simple() + pm_fold_invalid_access() + get_simplifying_rewrite_patterns(ops).pure();
    PatternMatcher late = early + get_late_rewrite_patterns(ops, disable_fast_idiv).pure() + get_transcendental_patterns(ops, force_transcendental, true).pure();
    PatternMatcher final = pm_commit_weak() + pm_cast_weak() + late + (extra ? *extra : PatternMatcher{}) + pm_split_ends() + pm_remove_invalid();
    // tinygrad commits the weak literals of the late decompositions (exp2's polynomial, shifts) in the final pass, which
    // then rebuilds every node above each one; committing them as they are made gives the same kernels
    e = std::make_unique<DecompMatchers>(DecompMatchers{early, pm_commit_weak() + late, final});
  }
  return *e;
}
}  // namespace

// ***** 2. full_rewrite_to_sink *****

UOp full_rewrite_to_sink(const UOp& ast, const CStyleLanguage& ren, bool optimize) {
  if (settings().DEBUG >= 5) std::printf("%s\n", ast.str().c_str());
  // symbolic_simple/symbolic/sym with the rules of tinygrad's that ours lack (gated LOAD/STORE folding, sym's extras)
  static const PatternMatcher simple = symbolic_simple() + pm_fold_invalid_access();
  static const PatternMatcher symb = symbolic() + pm_fold_invalid_access();
  static const PatternMatcher sym_all = sym() + pm_fold_invalid_access() + sym_extra() + pm_xpow();
  // the passes' matchers that do not depend on the renderer, built once
  static const PatternMatcher split_ranges = pm_split_ranges() + pm_flatten_range(), initial_sym = sym_all + pm_flatten_range(),
                              simplify_ranges = pm_flatten_range() + pm_simplify_ranges(),
                              postopt_sym = sym_all + pm_move_where_on_load() + pm_flatten_range() + pm_reduce_unparented(),
                              remove_reduces = mop_cleanup() + pm_reduce_local(),
                              add_loads = simple + pm_expand_broadcast() + pm_add_loads(), devectorize = simple + devectorizer2() + indexing_simplify(),
                              add_images = simple + ew_devectorizer() + pm_simplify_add_image(), extra_sym = sym_all + indexing_simplify(),
                              lower_index = simple + pm_lower_index_dtype() + indexing_simplify();
  SharedMemoScope memo_scope;  // the passes simplify the same index expressions again
  std::unordered_map<UOp, UOp> range_ctx;

  // preprocess (multi_pm is for in-kernel shards: not ported)
  UOp sink = rewrite("pm_mops", ast, pm_mops(), nullptr, true);

  if (optimize) {
    sink = rewrite("pm_load_collapse", sink, pm_load_collapse());
    sink = rewrite("split_ranges", sink, split_ranges, &range_ctx);
    sink = rewrite("initial_sym", sink, initial_sym);
    sink = rewrite("simplify_ranges", sink, simplify_ranges, &range_ctx);
    sink = tracked("apply_opts", [&] { return apply_opts(sink, ren); });
  }
  // ours, after the opts and also where they came applied (BEAM's candidates: timed without it, the step's padded
  // convolutions ran 1.7x faster than the search timed them). SIMD=0: tinygrad's kernels
  if (ren.simd_vectors()) sink = rewrite("pm_clip_reduce_gates", sink, pm_clip_reduce_gates());

  // ** expander **
  sink = rewrite("postopt_sym", sink, postopt_sym);
  auto range_map = build_range_map(sink, ren.simd_vectors());
  sink = rewrite("expander2", sink, expander2(), &range_map);
  ReduceContext rc;
  sink = rewrite("remove_reduces", sink, remove_reduces, &rc);
  int64_t local_slot = 0;
  sink = rewrite("pm_add_local_buffers", sink, pm_add_local_buffers(), &local_slot);
  sink = rewrite("pm_add_gpudims", sink, pm_add_gpudims(), ren);

  // ** lower to code **
  sink = rewrite("add_loads", sink, add_loads);
  sink = rewrite("devectorize", sink, devectorize, ren);
  sink = rewrite("sym_all", sink, sym_all);
  sink = tracked("memory_coalescing", [&] { return memory_coalescing(sink, ren); });
  sink = rewrite("add_images", sink, add_images, nullptr, true);
  if (ren.simd_vectors()) sink = rewrite("pm_vector_lanes", sink, pm_vector_lanes());
  if (ren.simd_vectors() && ren.vpdpbusd_lanes) sink = rewrite("pm_int_dot4", sink, pm_int_dot4(), ren);
  if (ren.simd_vectors() && ren.pmaddwd_lanes) sink = rewrite("pm_int_madd", sink, pm_int_madd(), ren);
  sink = rewrite("extra_sym", sink, extra_sym);
  std::unordered_map<UOp, UOp> lctx;
  sink = rewrite("lower_index", sink, lower_index, &lctx);
  sink = rewrite("symb", sink, symb);
  sink = rewrite("pm_cast_float_alu", sink, pm_cast_float_alu());
  // (after the symbolic passes: they would move a cast of exp's result into its select, a 16-bit select by 32-bit masks)
  if (ren.simd_vectors()) sink = rewrite("pm_exp2_normal", sink, pm_exp2_normal());

  // ** decompositions (the matchers depend on the renderer's ops and the env: built once per combination) **
  const DecompMatchers& d = decomp_matchers(supported_ops(ren), settings().DISABLE_FAST_IDIV != 0, settings().TRANSCENDENTAL >= 2, ren.extra_matcher);
  sink = rewrite("decomp_early", sink, d.early);
  // pm_dtype_decomps: not ported (no long emulation); fp8 is computed through float32 by the renderers' extra_matcher
  sink = rewrite("pm_commit_weak", sink, pm_commit_weak());
  sink = rewrite("decomp_late", sink, d.late, ren);
  sink = rewrite("pm_move_gates_from_index", sink, pm_move_gates_from_index());
  sink = rewrite("decomp_final", sink, d.final, ren);
  if (ren.simd_vectors() && !ren.has_local) sink = tracked("add_prefetches", [&] { return add_prefetches(sink); });
  sink = rewrite("pm_casted_consts", sink, pm_casted_consts(), nullptr, false, true);
  sink = rewrite("pm_implicit_barriers", sink, pm_implicit_barriers());
  sink = tracked("add_control_flow", [&] { return add_control_flow(sink); });
  int64_t nparams = 0;
  for (auto& x : sink.toposort()) nparams += x.op() == Ops::PARAM && x.arg().param().slot != -1;
  return rewrite("pm_number_params", sink, pm_number_params(), &nparams, false, true);
}

// ***** 3. to_program: linearize, estimates, render *****

std::vector<UOp> linearize_program(const UOp& sink) {
  std::vector<UOp> out, src;
  NodeMap<UOp> replaced;  // only the gated STOREs change
  for (auto& u : linearize(sink)) {
    src.clear();
    bool changed = false;
    for (auto& s : u.src()) { UOp* r = replaced.find(s); src.push_back(r ? *r : s), changed |= r != nullptr; }
    UOp nu = changed ? UOp::make(u.op(), u.dtype(), src, u.arg(), u.tag()) : u;
    if (nu.op() == Ops::IF || nu.op() == Ops::ENDIF) throw Error("linearize: IF/ENDIF are not allowed in the graph");
    const UOp* idx = nu.op() == Ops::STORE && nu.src().size() == 3 && nu.src(2).dtype() == dtypes::bool_ ? &nu.src(0) : nullptr;
    if (idx && (idx->op() == Ops::INDEX || idx->op() == Ops::SHRINK ||
                (idx->op() == Ops::CAST && (idx->src(0).op() == Ops::INDEX || idx->src(0).op() == Ops::SHRINK)))) {
      UOp st = nu.replace({.src = std::vector{nu.src(0), nu.src(1)}});
      UOp mif = UOp::make(Ops::IF, dtypes::void_, {nu.src(2), nu.src(0)});
      out.insert(out.end(), {mif, st, UOp::make(Ops::ENDIF, dtypes::void_, {mif})});
      replaced[u] = st;
    } else {
      out.push_back(nu);
      if (changed) replaced[u] = nu;
    }
  }
  return out;
}

Estimates estimates_from_uops(const std::vector<UOp>& uops, bool ignore_indexing) {
  auto dim = [](const UOp& x) -> int64_t {
    const UOp& c = x.op() == Ops::CAST ? x.src(0) : x;
    return c.op() == Ops::CONST ? c.val().as_int() : x.vmax().as_int();
  };
  std::unordered_set<const UOpNode*> excluded;
  if (ignore_indexing)
    for (auto& u : uops)
      if (u.op() == Ops::INDEX || u.op() == Ops::SHRINK) {
        std::vector<UOp> idx(u.src().begin() + 1, u.src().end());
        for (auto& x : UOp::sink(idx).toposort([](const UOp& x) { return x.op() != Ops::END; })) excluded.insert(x.get());
      }
  int64_t flops = 0, lds = 0, mults = 1;
  std::vector<int64_t> mult_stack;
  std::vector<std::pair<std::pair<const UOpNode*, Ops>, int64_t>> mem;
  for (auto& u : uops) {
    if (u.op() == Ops::LOAD || u.op() == Ops::STORE) {
      UOp buf = u;
      while (!buf.src().empty() && buf.op() != Ops::PARAM) buf = buf.src(0);
      if (buf.op() == Ops::PARAM) {
        auto key = std::make_pair(buf.get(), u.op());
        auto it = std::find_if(mem.begin(), mem.end(), [&](auto& e) { return e.first == key; });
        if (it == mem.end()) { mem.push_back({key, 0}); it = mem.end() - 1; }
        int64_t acc = it->second + lin_max_numel(u.src(0)) * u.src(0).dtype().itemsize() * mults;
        it->second = std::min(acc, lin_max_numel(buf) * buf.dtype().itemsize());
      }
    }
    if (u.op() == Ops::RANGE) {
      mult_stack.push_back(mults);
      if (u.dtype() != dtypes::void_) mults *= dim(u.src(0));
    } else if (u.op() == Ops::END) {
      mults = mult_stack.back();
      mult_stack.pop_back();
    } else if (u.op() == Ops::SPECIAL) {
      mults *= dim(u.src(0));
    } else if (u.op() == Ops::PARAM && u.arg().param().addrspace == AddrSpace::ALU && u.arg().param().name == "core_id") {
      mults *= u.vmax().as_int() + 1;
    } else if (u.op() == Ops::LOAD && u.src(0).addrspace() != AddrSpace::REG) {
      lds += lin_max_numel(u) * u.dtype().itemsize() * mults;
    } else if (u.op() == Ops::STORE && u.src(0).addrspace() != AddrSpace::REG) {
      lds += lin_max_numel(u) * u.src(1).dtype().itemsize() * mults;
    } else if (GroupOp::ALU.has(u.op()) && !excluded.count(u.get())) {
      flops += mults * (u.op() == Ops::MULACC ? 2 : 1) * lin_max_numel(u);
    } else if (u.op() == Ops::WMMA && !excluded.count(u.get())) {  // one thread's share of the N x M x K multiply-adds
      const WmmaArg* w = wmma_arg(u);
      flops += 2 * w->dims[0] * w->dims[1] * w->dims[2] / w->threads * mults;
    }
  }
  Estimates e;
  e.ops = flops, e.lds = lds;
  for (auto& [_, v] : mem) e.mem += v;
  return e;
}

std::string program_disk_key(const UOp& ast, const CStyleLanguage& ren) {
  const Settings& set = settings();
  if (set.CACHELEVEL < 1 || build_id().empty()) return "";
  return to_hex(ast.key()) + "|opt=" + std::to_string(ast.tag().none()) + "|" + set.key_text() + "|ren=" +
         to_hex(sha256(ren.identity())) + "|build=" + build_id();
}

namespace {
// the codegen behind to_program: the passes, launch sizes and buffer slots from the lowered sink, estimates, render
ProgramSpec lower_program(const UOp& ast, const CStyleLanguage& ren) {
  UOp sink = full_rewrite_to_sink(ast, ren, ast.tag().none());
  ProgramSpec spec;
  const KernelInfo* ki = kernel_info(sink);
  spec.name = ki ? ki->function_name() : "test";
  if (ki) for (auto& o : ki->applied_opts) spec.applied_opts.push_back(o.str());
  std::vector<std::pair<int64_t, std::string>> vars;
  bool global_ids = false;
  for (auto& u : sink.toposort()) {
    if (u.op() == Ops::PARAM && u.arg().param().addrspace == AddrSpace::ALU) {
      const ParamArg& pa = u.arg().param();
      std::string nm = pa.name.value_or("");
      if (std::find_if(vars.begin(), vars.end(), [&](auto& v) { return v.first == pa.slot; }) == vars.end()) vars.push_back({pa.slot, nm});
      if (nm == "core_id") spec.global[0] = u.vmax().as_int() + 1;
    }
    if (u.op() == Ops::STORE || u.op() == Ops::LOAD) {
      UOp idx = u.src(0).op() == Ops::CAST ? u.src(0).src(0) : u.src(0);
      if (idx.op() == Ops::INDEX || idx.op() == Ops::SHRINK) {
        UOp buf = idx.src(0);
        while ((buf.op() == Ops::AFTER || GroupOp::Movement.has(buf.op())) && !buf.src().empty()) buf = buf.src(0);
        if (buf.op() == Ops::PARAM) {
          auto& v = u.op() == Ops::STORE ? spec.outs : spec.ins;
          if (std::find(v.begin(), v.end(), int(buf.arg().param().slot)) == v.end()) v.push_back(int(buf.arg().param().slot));
        }
      }
    }
    if (u.op() == Ops::SPECIAL) {  // gidx<n> / lidx<n> / idx<n>: the launch's group, local or global size on axis n
      const std::string& nm = u.arg().s();
      auto& dims = nm[0] == 'l' ? spec.local : spec.global;
      dims[size_t(nm.back() - '0')] = u.src(0).vmax().as_int();
      global_ids |= nm[0] == 'i';
    }
  }
  if (global_ids) spec.local = {0, 0, 0};  // global ids only: the device picks the work-group size
  std::sort(spec.outs.begin(), spec.outs.end());
  std::sort(spec.ins.begin(), spec.ins.end());
  std::sort(vars.begin(), vars.end());
  for (auto& [_, n] : vars) spec.vars.push_back(n);
  std::vector<UOp> lst = linearize_program(sink);
  Estimates est = ki && ki->estimates ? *ki->estimates : estimates_from_uops(lst);
  spec.ops = double(est.ops), spec.mem = double(est.mem), spec.lds = double(est.lds), spec.uops = lst.size();
  spec.kernel = ren.render_kernel(lst, spec.name, ren.entry_style);
  return spec;
}
}  // namespace

std::shared_ptr<const ProgramSpec> to_program(const UOp& ast, const CStyleLanguage& ren) {
  static std::mutex mu;
  // bounded (a kernel with a new constant is a new key), but larger than the runtime's program cache: its entries are
  // only source text, and a program evicted there is lowered again here without rendering (or printing) it again
  static LruMap<std::string, std::shared_ptr<const ProgramSpec>> cache(8);
  if (ast.op() != Ops::SINK || !kernel_info(ast)) throw Error("to_program needs a SINK with a KernelInfo arg, got " + std::string(op_name(ast.op())));
  const auto& k = ast.key();
  std::string key(k.begin(), k.end());
  key += "|" + std::to_string(settings().key()) + "|" + ren.identity();
  {
    std::lock_guard<std::mutex> l(mu);
    if (auto* hit = cache.find(key)) return *hit;
  }
  std::string disk_key = program_disk_key(ast, ren);
  std::optional<ProgramSpec> prg;
  if (!disk_key.empty())
    if (auto rec = diskcache_get("program", disk_key)) prg = decode_program(*rec);
  if (!prg) {
    prg = lower_program(ast, ren);
    if (!disk_key.empty()) diskcache_put("program", disk_key, encode_program(*prg));
  }
  if (settings().DEBUG >= 4) std::printf("%s\n", prg->kernel.src.c_str());
  std::lock_guard<std::mutex> l(mu);
  if (auto* hit = cache.find(key)) return *hit;  // another thread lowered it meanwhile
  return cache.insert(key, std::make_shared<ProgramSpec>(std::move(*prg)));
}

}  // namespace tg
