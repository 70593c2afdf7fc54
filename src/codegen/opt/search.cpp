// tinygrad's codegen/opt/search.py: the action list, get_kernel_actions and beam_search, timing on the CPU device.
#include "codegen/opt/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "runtime/device.h"
#include "util/diskcache.h"
#include "util/settings.h"
#include "util/sha256.h"

namespace tg {

namespace {

// tinygrad's list; what a renderer does not support is refused by apply_opt. One list per (BEAM_PADTO, NOLOCALS, TC,
// TC_OPT): the tensor-core actions carry TC and TC_OPT in their arg
const std::vector<Opt>& actions() {
  static const auto make = [](bool padto, bool nolocals, int64_t tc, int64_t tc_opt) {
    std::vector<Opt> r;
    auto add = [&](OptOps op, std::initializer_list<int64_t> amts, int64_t axes) {
      for (int64_t amt : amts) for (int64_t axis = 0; axis < axes; axis++) r.push_back(Opt{op, axis, Arg(amt)});
    };
    add(OptOps::UPCAST, {0, 2, 3, 4, 5, 7}, 8);
    add(OptOps::UNROLL, {0, 4, 7}, 5);
    add(OptOps::LOCAL, {2, 3, 4, 8, 13, 16, 29}, 6);
    add(OptOps::GROUPTOP, {13, 16, 28, 29, 32, 49, 64, 256}, 3);
    add(OptOps::GROUP, {0, 4, 8, 16}, 3);
    if (padto) add(OptOps::PADTO, {32}, 7);
    r.push_back(Opt{OptOps::LOCAL, 0, Arg(int64_t(32))}), r.push_back(Opt{OptOps::LOCAL, 6, Arg(int64_t(2))});
    r.push_back(Opt{OptOps::TC, 0, Arg(Arg::Ints{-1, 0, tc})});
    for (int64_t axis = 0; axis < 9; axis++) r.push_back(Opt{OptOps::TC, axis, Arg(Arg::Ints{-1, tc_opt, tc})});  // 3 x 3: resnet's convs
    for (int64_t a0 = 0; a0 < 5; a0++) for (int64_t a1 = a0 + 1; a1 < 5; a1++) r.push_back(Opt{OptOps::SWAP, a0, Arg(a1)});
    add(OptOps::THREAD, {2, 3, 4, 5, 8, 12, 16, 24, 32, 64}, 3);
    if (nolocals) r.push_back(Opt{OptOps::NOLOCALS, std::nullopt, Arg()});
    return r;
  };
  static std::mutex mu;
  static std::map<std::array<int64_t, 4>, std::vector<Opt>> lists;
  const Settings& st = settings();
  // BEAM's TC_OPT where none is set is 2 (tinygrad's getenv("TC_OPT", 2)); the heuristic's is 0
  std::array<int64_t, 4> key{st.BEAM_PADTO != 0, st.NOLOCALS != 0, st.TC, st.TC_OPT < 0 ? 2 : st.TC_OPT};
  std::lock_guard lk(mu);
  auto it = lists.find(key);
  if (it == lists.end()) it = lists.emplace(key, make(key[0], key[1], key[2], key[3])).first;
  return it->second;
}

// the opts as "OP axis arg;..." (a tensor core's arg as its three ints): the disk cache's value
std::string opts_str(const std::vector<Opt>& opts) {
  std::string s;
  for (auto& o : opts) {
    s += std::to_string(int(o.op)) + " " + std::to_string(o.axis.value_or(-1));
    if (o.arg.is<Arg::Ints>()) for (auto v : o.arg.ints()) s += " " + std::to_string(v);
    else s += " " + std::to_string(o.arg.is<int64_t>() ? o.arg.i() : 0);
    s += ";";
  }
  return s;
}
std::optional<std::vector<Opt>> parse_opts(const std::string& s) {
  std::vector<Opt> r;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ';')) {
    int op = 0;
    long long axis = 0, arg = 0, tc_opt = 0, use_tc = 0;
    int n = std::sscanf(item.c_str(), "%d %lld %lld %lld %lld", &op, &axis, &arg, &tc_opt, &use_tc);
    if (n != (op == int(OptOps::TC) ? 5 : 3) || op < int(OptOps::TC) || op > int(OptOps::SWAP)) return std::nullopt;
    Arg a = op == int(OptOps::NOLOCALS) ? Arg() : op == int(OptOps::TC) ? Arg(Arg::Ints{arg, tc_opt, use_tc}) : Arg(int64_t(arg));
    r.push_back(Opt{OptOps(op), axis < 0 ? std::nullopt : std::optional<int64_t>(axis), a});
  }
  return r;
}

// scratch buffers (zeros: no NaN or denormal slow paths) for every buffer slot, and each variable at its midpoint
struct Bench {
  Device& dev;
  std::map<int64_t, std::pair<void*, size_t>> bufs;
  std::map<std::string, int64_t> vars;
  Bench(Device& d, const UOp& ast) : dev(d) {
    for (auto& u : ast.toposort())
      if (u.op() == Ops::PARAM && u.arg().param().vmin_vmax && u.arg().param().name)
        vars[*u.arg().param().name] = (u.arg().param().vmin_vmax->first.as_int() + u.arg().param().vmin_vmax->second.as_int()) / 2;
  }
  ~Bench() { for (auto& [slot, b] : bufs) dev.free(b.first, b.second); }
  void* buffer(int64_t slot, size_t nbytes) {
    auto& b = bufs[slot];
    if (b.second < nbytes) {
      if (b.first) dev.free(b.first, b.second);
      b = {dev.alloc(nbytes), nbytes};
      dev.copyin(b.first, std::vector<char>(nbytes).data(), nbytes);
    }
    return b.first;
  }
  // the fastest of `cnt` runs after a warm-up one, stopping once one is slower than early_stop (the warm-up counts
  // when it already is); infinity when it cannot run. Ours: `bar` is the time a candidate must beat to join the beam,
  // and one far behind it stops early too (its place past the beam needs no least of 3): a warm-up slower than
  // kBehindWarm x bar, a run slower than kBehindRun x bar (margins for a run slowed by the machine's other work)
  static constexpr double kBehindWarm = 1.5, kBehindRun = 1.15;
  double time(Program& prg, const ProgramSpec& spec, double early_stop, double bar = std::numeric_limits<double>::infinity(), int cnt = 3) {
    std::vector<void*> ptrs;
    std::vector<int64_t> vals;
    for (const KernelParam& p : spec.kernel.params) {
      if (p.is_buffer()) ptrs.push_back(buffer(p.slot, size_t(std::max<int64_t>(p.numel, 1)) * size_t(p.dtype.itemsize())));
      else if (p.var_name != "core_id") {
        auto it = vars.find(p.var_name.value_or(""));
        if (it == vars.end()) return std::numeric_limits<double>::infinity();
        vals.push_back(it->second);
      }
    }
    LaunchDims dims;
    for (size_t i = 0; i < 3; i++) dims.global[i] = int(spec.global[i]), dims.local[i] = int(spec.local[i]);
    double best = prg.launch(ptrs, vals, dims, true);
    if (best > std::min(early_stop, bar * kBehindWarm)) return best;
    best = std::numeric_limits<double>::infinity();
    for (int i = 0; i < cnt && (i == 0 || best <= std::min(early_stop, bar * kBehindRun)); i++) best = std::min(best, prg.launch(ptrs, vals, dims, true));
    return best;
  }
};

std::string time_str(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%10.2f us", s * 1e6);
  return b;
}

}  // namespace

std::map<int, Scheduler> get_kernel_actions(const Scheduler& s, bool include_0, int64_t max_up) {
  if (max_up < 0) max_up = settings().BEAM_UPCAST_MAX;
  std::map<int, Scheduler> acted;
  if (include_0) acted.emplace(0, s);
  const auto& acts = actions();
  auto fs = s.full_shape();
  for (size_t i = 0; i < acts.size(); i++) {
    const Opt& a = acts[i];
    // an amount equal to the whole axis is the same opt as amount 0 (the whole axis) where the list has that
    if (a.axis && a.op != OptOps::SWAP && a.op != OptOps::NOLOCALS && a.arg.is<int64_t>() && a.arg.i() != 0) {
      int64_t ax = -1;
      try {
        if (a.op == OptOps::UNROLL) { auto ud = s.unrollable_dims(); ax = *a.axis < int64_t(ud.size()) ? ud[size_t(*a.axis)] : -1; }
        else ax = *a.axis < int64_t(fs.size()) ? *a.axis : -1;
      } catch (const Error&) { continue; }
      if (ax < 0) continue;
      bool has_zero = a.op == OptOps::UPCAST || a.op == OptOps::UNROLL || a.op == OptOps::GROUP;
      if (fs[size_t(ax)] == a.arg.i() && has_zero) continue;
    }
    Scheduler s2 = s;
    try {
      s2.apply_opt(a);
    } catch (const Error&) {
      continue;
    }
    int64_t lcl = 1;
    auto fs2 = s2.full_shape();
    for (auto ax : s2.axes_of({AxisType::WARP, AxisType::LOCAL, AxisType::GROUP_REDUCE})) lcl *= fs2[size_t(ax)];
    // a tensor core's own upcasts (its N x M x K over its threads) do not count against BEAM_UPCAST_MAX
    int64_t tc_up = s2.tensor_core ? s2.tensor_core->dims[0] * s2.tensor_core->dims[1] * s2.tensor_core->dims[2] / s2.tensor_core->threads : 1;
    if (s2.upcast_size() / tc_up > max_up || lcl > settings().BEAM_LOCAL_MAX) continue;
    acted.emplace(int(i) + 1, std::move(s2));
  }
  return acted;
}

double shrink_for_timing(Scheduler& s, int64_t max_size) {
  auto rs = s.rngs();
  auto fs = s.full_shape();
  int64_t total = 1;
  for (int64_t n : fs) total *= std::max<int64_t>(n, 1);
  double factor = 1;
  std::unordered_map<UOp, UOp> subs;
  for (int64_t a : s.axes_of({AxisType::GLOBAL, AxisType::WEAK})) {
    int64_t n = fs[size_t(a)], m = n;
    if (total <= max_size) break;
    if (rs[size_t(a)].src(0).simplify().op() != Ops::CONST) continue;
    while (m > 16 && total / n * m > max_size) m = (m + 1) / 2;
    if (m == n) continue;
    subs[rs[size_t(a)]] = rs[size_t(a)].replace({.src = std::vector{rs[size_t(a)].src(0).const_like(ConstVal(m))}});
    total = total / n * m, factor *= double(n) / double(m);
  }
  if (!subs.empty()) s.ast = s.ast.substitute(subs);
  return factor;
}

std::vector<BeamCandidate> compile_candidates(Device& dev, const CStyleLanguage& ren, const std::vector<Scheduler>& cands,
                                              std::set<std::string>& seen, bool shrink, double* render_s) {
  std::vector<BeamCandidate> out;
  std::vector<KernelSource> ks;
  std::vector<size_t> at(cands.size(), SIZE_MAX);  // the candidate's place in out
  int64_t uops_max = settings().BEAM_UOPS_MAX;
  // rendering is graph work, on this thread: batches of the sources made so far compile on the others meanwhile
  auto render = [&](size_t i) -> std::optional<KernelSource> {
    auto t0 = std::chrono::steady_clock::now();
    std::optional<KernelSource> r;
    try {
      Scheduler c = cands[i];
      double factor = shrink && settings().BEAM_TEST_SIZE > 0 ? shrink_for_timing(c, settings().BEAM_TEST_SIZE) : 1;
      auto spec = to_program(c.get_optimized_ast("test"), ren);
      if ((uops_max <= 0 || int64_t(spec->uops) < uops_max) && seen.insert(spec->kernel.src).second) {
        r = KernelSource{spec->kernel.entry_name, spec->kernel.src, {spec->name, spec->kernel.entry_name}};
        at[i] = out.size(), ks.push_back(*r), out.push_back({i, std::move(spec), nullptr, factor});
      }
    } catch (const Error& e) {
      if (settings().BEAM_DEBUG) std::printf("BEAM: candidate %s failed to render: %s\n", opts_str(cands[i].applied_opts).c_str(), e.what());
    }
    if (render_s) *render_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  if (settings().COMPILE_BATCH >= 1) {
    auto progs = dev.load_cached_batch(cands.size(), render);
    for (size_t i = 0; i < cands.size(); i++)
      if (at[i] != SIZE_MAX) out[at[i]].prg = std::move(progs[i]);
  } else {
    for (size_t i = 0; i < cands.size(); i++) render(i);
    for (size_t j = 0; j < out.size(); j++) {
      try {
        out[j].prg = dev.load_cached(ks[j].entry, ks[j].src);
      } catch (const Error& e) {
        if (settings().BEAM_DEBUG) std::printf("BEAM: candidate %s failed to compile: %s\n", opts_str(cands[out[j].index].applied_opts).c_str(), e.what());
      }
    }
  }
  return out;
}

std::string beam_cache_key(const Scheduler& s, const CStyleLanguage& ren, int amt, const std::string& device) {
  // tinygrad's key (ast, amt, device, the renderer's variant, whether timed cut short) and the thread count
  return to_hex(s.ast.key()) + "|amt=" + std::to_string(amt) + "|threads=" + std::to_string(s.ren.global_max0) + "|test=" +
         std::to_string(settings().BEAM_TEST_SIZE) + "|min_us=" + std::to_string(settings().BEAM_MIN_US) + "|ren=" + to_hex(sha256(ren.identity())).substr(0, 16) + "|" + device;
}

Scheduler beam_search(const Scheduler& s, const CStyleLanguage& ren, int amt) {
  std::string device;
  for (auto& u : s.ast.toposort())
    if (u.op() == Ops::PARAM && !u.arg().param().device.empty()) device = u.arg().param().device;
  if (device.empty()) device = "CPU";
  if (device == "NULL" || device.starts_with("DISK")) return s;  // NULL renders only; DISK runs no kernels
  const Settings& set = settings();
  std::string key = beam_cache_key(s, ren, amt, device);
  bool use_cache = set.CACHELEVEL >= 1;
  if (use_cache && !set.IGNORE_BEAM_CACHE)
    if (auto val = diskcache_get("beam_search", key)) {
      if (*val == kBeamHandCoded) return hand_coded_optimizations(s);
      if (auto opts = parse_opts(*val); opts && opts->size() >= s.applied_opts.size()) {
        try {
          Scheduler r = s;
          for (size_t i = s.applied_opts.size(); i < opts->size(); i++) r.apply_opt((*opts)[i]);
          return r;
        } catch (const Error&) {}  // stale entry: search again
      }
    }

  Device& dev = get_device(device);
  Bench bench(dev, s.ast);
  const double inf = std::numeric_limits<double>::infinity(), min_progress = double(set.BEAM_MIN_PROGRESS_NS) * 1e-9;
  int beam_debug = int(set.BEAM_DEBUG), dbg = int(set.DEBUG);
  std::vector<std::pair<Scheduler, double>> beam{{s, inf}};
  std::set<std::string> seen_srcs, none;
  auto st = std::chrono::steady_clock::now();
  // ours: the heuristic's kernel is timed first. A kernel it runs in under BEAM_MIN_US is kept as it is (the search could
  // save less than that a launch, for seconds of compiles), and its time bounds every round's early stop
  Scheduler hc = hand_coded_optimizations(s);
  std::vector<BeamCandidate> hc_prg = compile_candidates(dev, ren, {hc}, none);
  auto time_hc = [&] { return hc_prg.empty() || !hc_prg[0].prg ? inf : bench.time(*hc_prg[0].prg, *hc_prg[0].spec, inf) * hc_prg[0].factor; };
  double hc_tm = time_hc();
  auto keep_hc = [&](const char* why) {
    if (use_cache) diskcache_put("beam_search", key, kBeamHandCoded);
    if (beam_debug) std::printf("BEAM_SEARCH: the hand-coded kernel %s\n", why);
    return hc;
  };
  if (hc_tm < double(set.BEAM_MIN_US) * 1e-6) {
    if (dbg >= 2) std::printf("BEAM %s: not searched, the heuristic's kernel takes %s\n", to_hex(s.ast.key()).substr(0, 8).c_str(), time_str(hc_tm).c_str());
    return keep_hc("is under BEAM_MIN_US");
  }
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count(); };
  if (dbg >= 2) std::printf("   0.00s:                from   1 ->   1 actions\n");
  // where the search's time goes (DEBUG>=2 prints it per kernel)
  double render_s = 0, compile_s = 0;
  size_t rounds = 0, n_cands = 0, n_timed = 0;
  while (true) {
    std::vector<Scheduler> candidates;
    for (auto& [si, tm] : beam) for (auto& [i, c] : get_kernel_actions(si, false)) candidates.push_back(c);
    std::vector<std::pair<Scheduler, double>> timed;
    double least_ops = inf, round_best = inf;
    std::vector<double> round_tms;  // sorted
    double t0 = elapsed(), r0 = render_s;
    auto compiled = compile_candidates(dev, ren, candidates, seen_srcs, true, &render_s);
    double t_compiled = elapsed() - t0;
    compile_s += t_compiled - (render_s - r0), rounds++, n_cands += candidates.size();
    for (BeamCandidate& c : compiled) {
      if (!c.prg) continue;
      least_ops = std::min(least_ops, c.spec->ops * c.factor);
      if (least_ops * 1000 < c.spec->ops * c.factor) continue;  // 1000x the compute of the cheapest candidate
      // ours: early stop at 3x the best of this round and of the heuristic's kernel as well as of the beam
      double bar = round_tms.size() >= size_t(amt) ? round_tms[size_t(amt) - 1] : inf;
      double tm = bench.time(*c.prg, *c.spec, std::min({beam[0].second, round_best, hc_tm}) * 3 / c.factor, bar / c.factor) * c.factor;
      if (!std::isfinite(tm)) continue;
      round_best = std::min(round_best, tm);
      round_tms.insert(std::upper_bound(round_tms.begin(), round_tms.end(), tm), tm);
      timed.push_back({candidates[c.index], tm}), n_timed++;
      if (beam_debug >= 2)
        std::printf("%7.2fs: %5zu %5zu uops %s run x%-4g %s\n", elapsed(), c.index, c.spec->uops, time_str(tm).c_str(), c.factor,
                    opts_str(candidates[c.index].applied_opts).c_str());
    }
    std::stable_sort(timed.begin(), timed.end(), [](auto& a, auto& b) { return a.second < b.second; });
    bool exiting = timed.empty() || timed[0].second < min_progress || beam[0].second - timed[0].second < min_progress;
    if (!exiting) beam.assign(timed.begin(), timed.begin() + std::min<ptrdiff_t>(amt, ptrdiff_t(timed.size())));
    else if (!timed.empty() && timed[0].second < beam[0].second) beam = {timed[0]};
    if (dbg >= 2)
      std::printf("%7.2fs: %s from %3zu -> %3zu actions (%.2fs render+compile) %s\n", elapsed(), time_str(beam[0].second).c_str(), candidates.size(),
                  timed.size(), t_compiled, opts_str(beam[0].first.applied_opts).c_str());
    if (exiting) break;
  }
  if (dbg >= 2)
    std::printf("BEAM %s: %zu rounds, %zu candidates, %zu timed: %.2fs render, %.2fs compile, %.2fs timing\n", to_hex(s.ast.key()).substr(0, 8).c_str(),
                rounds, n_cands, n_timed, render_s, compile_s, elapsed() - render_s - compile_s);
  // the heuristic's kernel, timed again beside the search's pick, where it is faster: it shapes kernels past the opts BEAM
  // searches (matvec lanes' split reduce, copy tiles), and the training step's kernels from the search alone ran 2x
  // slower than its (both with the threads apply_opts gives the search's pick)
  Scheduler best = beam[0].first;
  apply_threads(best);
  double best_tm = inf;
  for (BeamCandidate& c : compile_candidates(dev, ren, {best}, none))
    if (c.prg) best_tm = bench.time(*c.prg, *c.spec, inf) * c.factor;
  if (hc_tm = time_hc(); hc_tm < best_tm) return keep_hc(("is faster: " + time_str(hc_tm) + " against " + time_str(best_tm)).c_str());
  if (use_cache) diskcache_put("beam_search", key, opts_str(beam[0].first.applied_opts));
  if (beam_debug) std::printf("BEAM_SEARCH: final tm=%s, applied_opts=%s\n", time_str(beam[0].second).c_str(), opts_str(beam[0].first.applied_opts).c_str());
  return beam[0].first;
}

}  // namespace tg
