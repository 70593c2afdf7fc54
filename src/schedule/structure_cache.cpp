// The realize cache: callify and create_linear_with_vars depend on a tensor graph's structure, not on which buffers
// it reads. The graph is keyed with its input BUFFERs renumbered in order of first use (canonical buffers, never
// allocated), the schedule of that canonical graph is kept as a template, and each realize instantiates it: canonical
// buffers become the real inputs, every other BUFFER of the template (outputs, intermediates) a fresh one. A repeated
// structure thus costs one walk of its graph instead of four rewrites, the kernel split and the memory planner
// (tinygrad keys its schedule cache the same way, after callify, which it reruns on every realize).
#include <chrono>
#include <cstdio>
#include <unordered_map>

#include "engine/stats.h"
#include "schedule/schedule.h"
#include "uop/args.h"
#include "uop/nodemap.h"
#include "util/env.h"

namespace tg {

namespace {

constexpr int64_t canonical_slot_base = int64_t(1) << 48;

bool is_input_buffer(const UOp& u) {
  return u.op() == Ops::BUFFER && u.src().size() == 1 && u.arg().is<std::shared_ptr<const ParamArg>>() &&
         u.addrspace() == AddrSpace::GLOBAL;
}

struct Template {
  UOp linear;                                // over canonical input buffers and template buffers
  VarVals vars;
  std::vector<std::pair<UOp, UOp>> becomes;  // canonical as-built node -> its view of a template or canonical buffer
};

std::unordered_map<ScheduleKey, Template, ScheduleKeyHash>& cache() {
  static std::unordered_map<ScheduleKey, Template, ScheduleKeyHash> c;
  return c;
}

struct Canonical {
  UOp sink;
  std::vector<UOp> inputs;                     // real input buffer of each canonical slot
  NodeMap<UOp> to_real;                        // canonical node -> as-built node, where they differ
  bool cacheable = true;                       // bound variables carry values: those graphs go the long way
};

Canonical canonicalize(const UOp& big_sink) {
  Canonical c;
  NodeMap<UOp> canon(big_sink.topo_nodes().size() * 2), slot_of;
  std::vector<UOp> src;
  for (const UOpNode* n : big_sink.topo_nodes()) {
    UOp u(n), out;
    if (u.is_bound_var()) c.cacheable = false;
    if (is_input_buffer(u)) {
      auto [slot, added] = slot_of.try_emplace(u);
      if (added) {
        ParamArg pa = u.arg().param();
        pa.slot = canonical_slot_base + int64_t(c.inputs.size());
        *slot = UOp::make(Ops::BUFFER, u.dtype(), u.src(), Arg(std::move(pa)), u.tag());
        c.inputs.push_back(u);
      }
      out = *slot;
    } else {
      src.clear();
      bool changed = false;
      for (const UOp& s : u.src()) {
        const UOp& cs = *canon.find(s);
        changed |= cs != s;
        src.push_back(cs);
      }
      out = changed ? u.replace({.src = src}) : u;
    }
    if (out != u) c.to_real[out] = u;
    canon[u] = std::move(out);
  }
  c.sink = *canon.find(big_sink);
  return c;
}

// the template's nodes with canonical buffers replaced by the real inputs and every other BUFFER by a fresh one
struct Instantiate {
  const std::vector<UOp>& inputs;
  NodeMap<UOp> memo;
  UOp operator()(const UOp& u) {
    if (UOp* m = memo.find(u)) return *m;
    UOp out;
    if (is_input_buffer(u)) {
      int64_t slot = u.arg().param().slot;
      if (slot >= canonical_slot_base) {
        size_t i = size_t(slot - canonical_slot_base);
        if (i >= inputs.size()) internal_error("realize cache: canonical buffer " + std::to_string(i) + " out of range");
        out = inputs[i];
      } else {
        out = UOp::new_buffer(u.device().value_or("CPU"), u.max_numel(), u.dtype());
      }
    } else if (u.src().empty()) {
      out = u;
    } else {
      std::vector<UOp> s;
      bool changed = false;
      for (const UOp& x : u.src()) s.push_back((*this)(x)), changed |= s.back() != x;
      out = changed ? u.replace({.src = s}) : u;
    }
    return memo[u] = out;
  }
};

}  // namespace

Scheduled schedule_tensor_graph(const UOp& big_sink) {
  auto st = std::chrono::steady_clock::now();
  auto direct = [&] {
    Callified call = transform_to_call(big_sink);
    auto [linear, vars] = create_linear_with_vars(call.call);
    return Scheduled{linear, vars, std::move(call.becomes)};
  };
  if (getenv_int("SCACHE", 1) == 0) return direct();
  Canonical c = canonicalize(big_sink);
  if (!c.cacheable) return direct();
  ScheduleKey key = ScheduleKey::of(c.sink);
  auto it = cache().find(key);
  bool hit = it != cache().end();
  if (hit) {
    engine_stats().schedules++, engine_stats().realize_cache_hits++;
  } else {
    Callified call = transform_to_call(c.sink);
    auto [linear, vars] = create_linear_with_vars(call.call);
    it = cache().emplace(key, Template{linear, vars, std::move(call.becomes)}).first;
  }
  const Template* tpl = &it->second;
  Instantiate inst{c.inputs, {}};
  std::vector<UOp> calls;
  calls.reserve(tpl->linear.src().size());
  for (const UOp& call : tpl->linear.src()) {
    std::vector<UOp> s{call.src(0)};
    for (size_t i = 1; i < call.src().size(); i++) s.push_back(inst(call.src(i)));
    calls.push_back(call.replace({.src = s}));
  }
  Scheduled out{tpl->linear.replace({.src = calls}), tpl->vars, {}};
  out.becomes.reserve(tpl->becomes.size());
  for (auto& [k, v] : tpl->becomes) {
    UOp* real = c.to_real.find(k);
    out.becomes.emplace_back(real ? *real : k, inst(v));
  }
  if (hit && debug_level() >= 1 && calls.size() > 1) {
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - st).count();
    std::printf("scheduled %5zu kernels in %8.2f ms |  realize cache hit\n", calls.size(), ms);
  }
  return out;
}

}  // namespace tg
