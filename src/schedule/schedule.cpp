// The kernel graph to a LINEAR (tinygrad's schedule/__init__.py): kernels in dependency order (reads after writes,
// writes after the reads of the state they overwrite), a schedule cache keyed by the CALL body, fresh BUFFERs for the
// intermediates of each realize, COPYs between devices, then the memory planner.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "util/stats.h"
#include "schedule/memory.h"
#include "schedule/rangeify.h"
#include "schedule/schedule.h"
#include "uop/args.h"
#include "util/env.h"
#include "util/lru.h"

namespace tg {

namespace {

bool is_state(const UOp& s) { return OpSet{Ops::AFTER, Ops::BUFFER, Ops::PARAM, Ops::MSELECT, Ops::MSTACK}.has(s.op()); }
UOp unwrap_src(UOp s) {
  while (s.src().size() && !is_state(s)) s = s.src(0);
  return s;
}
void states(const UOp& s0, std::vector<UOp>& out) {
  UOp s = unwrap_src(s0);
  if (s.op() == Ops::MSELECT || s.op() == Ops::MSTACK) {
    for (auto& x : s.src()) states(x, out);
    return;
  }
  if (!OpSet{Ops::AFTER, Ops::BUFFER, Ops::PARAM}.has(s.op()))
    throw Error("schedule: a kernel input must be a buffer state, not " + std::string(op_name(s.op())));
  out.push_back(s);
}
// an AFTER's sources split into the kernels that write it and the AFTERs it must also wait for
std::pair<std::vector<UOp>, std::vector<UOp>> split_after(const UOp& after) {
  std::vector<UOp> kernels, deps;
  for (size_t i = 1; i < after.src().size(); i++) {
    const UOp& s = after.src(i);
    if (s.op() == Ops::CALL || s.op() == Ops::END) kernels.push_back(s);
    else if (s.op() == Ops::AFTER) deps.push_back(s);
    else if (s.op() != Ops::STORE) throw Error("schedule: an AFTER source must be CALL, END, STORE or AFTER, not " + std::string(op_name(s.op())));
  }
  return {kernels, deps};
}
bool gate_kernel_sink(const UOp& x) { return x.op() != Ops::LINEAR && !(x.op() == Ops::SINK && kernel_info(x)); }
bool contains(const std::vector<UOp>& v, const UOp& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

UOp make_call(const UOp& body, std::span<const UOp> args) {
  std::vector<UOp> src{body};
  src.insert(src.end(), args.begin(), args.end());
  return UOp::make(Ops::CALL, dtypes::void_, src, make_arg(CallInfo{}));
}

}  // namespace

ScheduleKey ScheduleKey::of(const UOp& graph) { return {graph, settings().key()}; }
size_t ScheduleKeyHash::operator()(const ScheduleKey& k) const { return k.graph.hash() * 1000003u ^ k.settings_key; }

namespace {
// the kernels in post order of a walk from those no kernel waits on (in first-seen order), through each one's parents
std::vector<UOp> post_order(const std::vector<UOp>& order, const std::unordered_map<UOp, std::vector<UOp>>& children,
                            std::unordered_map<UOp, std::vector<UOp>>& parents) {
  std::vector<UOp> out;
  std::unordered_map<UOp, int> state;  // 1: on the stack, 2: emitted
  for (auto& root : order) {
    if (children.contains(root) || state[root]) continue;
    std::vector<std::pair<UOp, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [k, i] = stack.back();
      std::vector<UOp>& ps = parents[k];
      if (i < ps.size()) {
        UOp p = ps[i++];
        if (state[p] == 1) throw Error("schedule: cycle detected in the assign graph");
        if (!state[p]) state[p] = 1, stack.push_back({p, 0});
        continue;
      }
      state[k] = 2, out.push_back(k), stack.pop_back();
    }
  }
  if (out.size() != order.size()) throw Error("schedule: cycle detected in the assign graph");
  return out;
}
}  // namespace

UOp create_schedule(const UOp& sched_sink) {
  std::unordered_map<UOp, std::vector<UOp>> children;
  std::vector<UOp> order;  // kernels in first-seen order
  std::unordered_set<UOp> seen;
  struct Write { UOp after, prev_state; std::vector<UOp> kernels; };
  std::unordered_map<UOp, std::vector<Write>> writes;
  struct Read { UOp after, kernel, state; };
  std::vector<Read> reads;
  auto add_kernel = [&](const UOp& k) { if (seen.insert(k).second) order.push_back(k); };
  for (const UOp& u : sched_sink.toposort(gate_kernel_sink)) {
    if (u.op() != Ops::AFTER) continue;
    auto [kernels, after_deps] = split_after(u);
    UOp prev_state = unwrap_src(u.src(0));
    std::vector<UOp> prev_kernels;
    if (prev_state.op() == Ops::AFTER) prev_kernels = split_after(prev_state).first;
    std::vector<UOp> new_kernels;
    for (auto& k : kernels)
      if (!contains(prev_kernels, k)) new_kernels.push_back(k);
    writes[u.buf_uop()].push_back({u, prev_state, new_kernels});
    for (auto& k : kernels) {
      add_kernel(k);
      if (k.op() == Ops::END && k.src(0).op() != Ops::CALL) throw Error("schedule: END src[0] must be a CALL");
      const UOp& kc = k.op() == Ops::END ? k.src(0) : k;
      std::vector<UOp> read_states, dep_states;
      for (size_t i = 1; i < kc.src().size(); i++) states(kc.src(i), read_states);
      for (auto& st : read_states) reads.push_back({u, k, st});
      for (auto& s : after_deps) states(s, dep_states);
      read_states.insert(read_states.end(), dep_states.begin(), dep_states.end());
      for (auto& st : read_states) {
        if (st.op() != Ops::AFTER) continue;
        for (auto& t : split_after(st).first) children[t].push_back(k);
      }
    }
  }
  // a kernel reading state S runs before any other kernel writing the state that supersedes S
  for (auto& [u, k, s] : reads) {
    auto it = writes.find(s.buf_uop());
    if (it == writes.end()) continue;
    for (auto& w : it->second) {
      if (w.after == u || w.prev_state != s) continue;
      for (auto& t : w.kernels) {
        if (t == k || k.in_backward_slice_with_self(t)) continue;
        add_kernel(t);
        children[k].push_back(t);
      }
    }
  }
  // depth first from the kernels nothing waits on, each after the kernels it waits on, the one with the longest chain
  // of kernels behind it first: a short producer (a GEMM's packed panels) runs right before its first consumer, so it
  // is dead before the next one is made (tinygrad's breadth-first order runs every independent producer first)
  std::unordered_map<UOp, std::vector<UOp>> parents;
  for (auto& k : order)
    if (auto it = children.find(k); it != children.end())
      for (auto& c : it->second) parents[c].push_back(k);
  std::vector<UOp> topo = post_order(order, children, parents);
  std::unordered_map<UOp, int64_t> depth;
  for (auto& k : topo)
    for (auto& p : parents[k]) depth[k] = std::max(depth[k], depth[p] + 1);
  for (auto& [k, ps] : parents) std::stable_sort(ps.begin(), ps.end(), [&](const UOp& a, const UOp& b) { return depth[a] > depth[b]; });
  topo = post_order(order, children, parents);
  std::vector<UOp> linearized;
  for (const UOp& rk : topo) {
    if (rk.op() == Ops::LINEAR) {
      linearized.insert(linearized.end(), rk.src().begin(), rk.src().end());
    } else {
      const UOp& k = rk.op() == Ops::END ? rk.src(0) : rk;
      if (k.op() != Ops::CALL) throw Error("schedule: unexpected " + std::string(op_name(k.op())) + " in the kernel queue");
      std::vector<UOp> bufs;
      for (size_t i = 1; i < k.src().size(); i++)
        if (!k.src(i).is_bound_var()) bufs.push_back(unwrap_src(k.src(i)).buf_uop());
      linearized.push_back(make_call(k.src(0), bufs));
    }
  }
  return UOp::make(Ops::LINEAR, dtypes::void_, linearized);
}

namespace {

// keyed by the function node itself: hash-consing makes an equal graph the same node, and the key keeps it alive, so
// a hit costs one hash lookup (tinygrad keys by the sha256 of the graph, which it recomputes for each new graph).
// Bounded (util/lru.h): a kernel graph with a new constant is a new key
LruMap<ScheduleKey, UOp, ScheduleKeyHash>& schedule_cache() {
  static LruMap<ScheduleKey, UOp, ScheduleKeyHash> c;
  return c;
}

UOp lower_sink_to_linear(const UOp& function) {
  auto st = std::chrono::steady_clock::now();
  bool scache = settings().SCACHE != 0, hit = false;
  UOp linear;
  ScheduleKey key = ScheduleKey::of(function);
  if (UOp* c = scache ? schedule_cache().find(key) : nullptr) linear = *c, hit = true;
  else {
    engine_stats().schedule_cache_misses++;
    linear = create_schedule(get_kernel_graph(function));
    if (scache) schedule_cache().insert(key, linear);
  }
  if ((settings().DEBUG >= 1 && linear.src().size() > 1) || settings().DEBUG >= 3) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - st).count();
    const auto& k = function.key();
    char hex[9];
    std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", k[0], k[1], k[2], k[3]);
    std::printf("scheduled %5zu kernels in %8.2f ms | %s %s | %7zu uops in cache\n", linear.src().size(), ms,
                hit ? " cache hit" : "CACHE MISS", hex, live_uops());
  }
  return linear;
}

const PatternMatcher& pm_flatten_linear() {
  static const PatternMatcher pm{UPat(Ops::LINEAR, {}, {}, {}, "lin", true) >> [](M m) -> UOp {
    UOp lin = m["lin"];
    std::vector<UOp> out;
    bool nested = false;
    for (auto& c : lin.src()) {
      if (c.op() == Ops::LINEAR) out.insert(out.end(), c.src().begin(), c.src().end()), nested = true;
      else out.push_back(c);
    }
    return nested ? lin.replace({.src = out}) : UOp();
  }};
  return pm;
}

// the LINEAR of a CALL with its PARAMs replaced by the call's arguments and fresh BUFFERs for its intermediates
UOp resolve_linear_call(const UOp& linear_call) {
  std::unordered_map<UOp, UOp> fresh;
  std::span<const UOp> args = linear_call.src().subspan(1);
  auto params_to_buffers = [&](const UOp& x) -> UOp {
    if (x.op() == Ops::PARAM && x.arg().param().slot >= 0) return args[size_t(x.arg().param().slot)];
    if (x.op() == Ops::BUFFER && x.src().size() == 1 && x.arg().is<std::shared_ptr<const ParamArg>>() && x.addrspace() == AddrSpace::GLOBAL) {
      auto [it, added] = fresh.try_emplace(x);
      if (added) it->second = UOp::new_buffer(*x.device(), x.max_numel(), x.dtype());
      return it->second;
    }
    return {};
  };
  PatternMatcher pm{UPat::ops(OpSet{Ops::PARAM, Ops::BUFFER}, "x") >> [&](M m) { return params_to_buffers(m["x"]); }};
  UOp linear = graph_rewrite(linear_call.src(0), pm, RewriteOpts{.walk = true});
  // the kernels name a bound Variable by its call slot ("p1"; the PARAM's slot itself is dropped in the kernel): give it
  // its own name back, which the launch looks its value up by
  std::unordered_map<std::string, UOp> binds;
  for (size_t i = 0; i < args.size(); i++)
    if (args[i].is_bound_var()) binds["p" + std::to_string(i)] = args[i].src(0).replace({.op = Ops::PARAM});
  if (binds.empty()) return linear;
  std::vector<UOp> out;
  for (auto& si : linear.src()) {
    std::unordered_map<UOp, UOp> subs;
    for (auto& x : si.toposort())
      if (x.op() == Ops::PARAM && x.addrspace() == AddrSpace::ALU && x.arg().param().name)
        if (auto it = binds.find(*x.arg().param().name); it != binds.end()) subs[x] = it->second;
    std::vector<UOp> s;
    for (auto& x : si.src()) s.push_back(subs.empty() ? x : x.substitute(subs));
    out.push_back(si.replace({.src = s}));
  }
  return linear.replace({.src = out});
}

bool is_disk(const std::optional<std::string>& d) { return d && d->starts_with("DISK"); }

// the (dst, src) PARAMs of a kernel that only moves dst[i] = src[i], over one RANGE or for one element (at index 0)
std::optional<std::pair<UOp, UOp>> plain_copy(const UOp& ast) {
  if (ast.op() != Ops::SINK || ast.src().size() != 1) return std::nullopt;
  UOp st = ast.src(0), r;
  if (st.op() == Ops::END) {
    if (st.src().size() != 2 || st.src(1).op() != Ops::RANGE) return std::nullopt;
    r = st.src(1), st = st.src(0);
  }
  if (st.op() != Ops::STORE || st.src().size() != 2) return std::nullopt;
  auto param_at = [&](const UOp& x) -> UOp {
    if (x.op() != Ops::INDEX || x.src().size() != 2 || x.src(0).op() != Ops::PARAM) return {};
    const UOp& i = x.src(1);
    bool ok = r ? i == r : i.op() == Ops::CONST && i.val().is_int() && i.val().as_int() == 0;
    return ok ? x.src(0) : UOp();
  };
  UOp dst = param_at(st.src(0)), src = param_at(st.src(1));
  if (!dst || !src || dst.dtype() != src.dtype()) return std::nullopt;
  return std::pair{dst, src};
}

// tinygrad's pm_copy_from_store: a kernel that is a plain copy between two devices (or in or out of a DISK file, where
// no kernel can run) becomes a CALL of COPY(src) with the args (dst, src); any other kernel must have its buffers on
// one device
UOp copy_from_store(const UOp& call) {
  const UOp& ast = call.src(0);
  if (ast.op() != Ops::SINK || call.src().size() < 2) return call;
  if (auto pc = plain_copy(ast)) {
    auto& [dst, src] = *pc;
    if (dst.device() != src.device() || is_disk(dst.device())) {
      auto arg = [&](const UOp& p) {
        int64_t slot = p.arg().param().slot;
        if (slot < 0 || size_t(slot) + 1 >= call.src().size()) internal_error("copy kernel reads argument " + std::to_string(slot));
        return call.src(size_t(slot) + 1);
      };
      UOp copy = UOp::make(Ops::COPY, src.dtype(), {src}, Arg(*dst.device()));
      return UOp::make(Ops::CALL, dtypes::void_, {copy, arg(dst), arg(src)}, call.arg());
    }
  }
  std::optional<std::string> dev;
  for (auto& x : ast.toposort())
    if (x.op() == Ops::PARAM && x.device()) {
      if (dev && *dev != *x.device())
        throw Error("all buffers of a kernel must be on the same device: " + *dev + ", " + *x.device() +
                    (is_disk(dev) || is_disk(x.device()) ? " (a DISK tensor can only be copied, as one contiguous range: .to(\"CPU\"))" : ""));
      dev = x.device();
    }
  return call;
}

}  // namespace

std::pair<UOp, VarVals> create_linear_with_vars(const UOp& big_sink) {
  engine_stats().schedules++;
  static const PatternMatcher pm_schedule{UPat(Ops::SINK, {}, {}, {}, "function", true) >> [](M m) -> UOp {
    return kernel_info(m["function"]) ? UOp() : lower_sink_to_linear(m["function"]);
  }};
  UOp linear_call = graph_rewrite(big_sink, pm_schedule, RewriteOpts{.enter_calls = true});
  static const PatternMatcher pm_resolve = PatternMatcher{UPat(Ops::CALL, {}, {UPat(Ops::LINEAR)}, {}, "c", true) >> [](M m) {
                                             return resolve_linear_call(m["c"]);
                                           }} + pm_flatten_linear();
  UOp linear = graph_rewrite(linear_call, pm_resolve);
  std::vector<UOp> calls;
  for (auto& c : linear.src()) calls.push_back(copy_from_store(c));
  linear = linear.replace({.src = calls});
  VarVals var_vals;
  for (size_t i = 1; i < big_sink.src().size(); i++) {
    const UOp& b = big_sink.src(i);
    if (!b.is_bound_var()) continue;
    auto name = b.src(0).arg().param().name.value_or("");
    int64_t val = b.src(1).src(1).val().as_int();
    if (auto it = var_vals.find(name); it != var_vals.end() && it->second != val)
      throw Error("bind mismatch on " + name + ", " + std::to_string(it->second) + " != " + std::to_string(val));
    var_vals[name] = val;
  }
  std::unordered_set<UOp> held;
  if (linear_call.op() == Ops::CALL)
    for (size_t i = 1; i < linear_call.src().size(); i++)
      if (linear_call.src(i).op() == Ops::BUFFER) held.insert(linear_call.src(i));
  return {memory_plan_rewrite(linear, held), var_vals};
}

}  // namespace tg
