// The realize cache: callify and create_linear_with_vars depend on a tensor graph's structure, not on which buffers
// it reads. The graph is keyed with its input BUFFERs renumbered in order of first use (canonical buffers, never
// allocated), the schedule of that canonical graph is kept as a template, and each realize instantiates it: canonical
// buffers become the real inputs, every other BUFFER of the template (outputs, intermediates) a fresh one. A repeated
// structure is found without building its canonical graph: a few templates picked by a fingerprint of the graph's top
// are walked in step with it, node by node, which also finds its inputs. It thus costs one walk of its graph instead
// of four rewrites, the kernel split and the memory planner (tinygrad keys its schedule cache the same way, after
// callify, which it reruns on every realize).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <unordered_map>

#include "util/stats.h"
#include "schedule/schedule.h"
#include "uop/args.h"
#include "uop/nodemap.h"
#include "util/env.h"
#include "util/lru.h"

namespace tg {

namespace {

constexpr int64_t canonical_slot_base = int64_t(1) << 48;

bool is_input_buffer(const UOp& u) {
  return u.op() == Ops::BUFFER && u.src().size() == 1 && u.arg().is<std::shared_ptr<const ParamArg>>() &&
         u.addrspace() == AddrSpace::GLOBAL;
}

// a template's canonical graph as steps in its topological order, for a realize to walk in step with its own graph:
// a node that reads a canonical buffer is compared by op, dtype, arg, tag and its sources' steps; one that does not
// must be the very node (hash-consing: the same structure without inputs is the same node)
struct Step {
  enum Kind : uint8_t { Same, Input, Walk } kind;
  const UOpNode* node;
  uint32_t first_src;  // a Walk's source steps, in Template::src_steps
};

struct Template {
  UOp linear;                                // over canonical input buffers and template buffers
  VarVals vars;
  std::vector<std::pair<UOp, UOp>> becomes;  // canonical as-built node -> its view of a template or canonical buffer
  ScheduleKey key;                           // the canonical graph, keeping the steps' nodes alive
  std::vector<Step> steps;                   // the sink last
  std::vector<uint32_t> src_steps, input_steps;  // input_steps[slot]: the step of canonical buffer slot
  std::vector<int64_t> becomes_steps;        // the step of each becomes key, -1 where the key is a Same node's source
  size_t fingerprint;                        // its bucket
};

// bounded: a graph with a new constant is a new structure (util/lru.h)
LruMap<ScheduleKey, Template, ScheduleKeyHash>& cache() {
  static LruMap<ScheduleKey, Template, ScheduleKeyHash> c;
  return c;
}

// the templates tried by a walk, most recently used first, by a cheap fingerprint of the graph's top
constexpr size_t bucket_size = 4;
std::unordered_map<size_t, std::vector<Template*>>& buckets() {
  static std::unordered_map<size_t, std::vector<Template*>> b;
  return b;
}

// op, dtype and source count of the first nodes met depth-first from the sink (input buffers differ only in their arg)
size_t fingerprint(const UOp& big_sink, const ScheduleKey& knobs) {
  size_t h = ScheduleKeyHash{}(ScheduleKey{UOp(), knobs.settings_key}), budget = 32;
  auto visit = [&](auto& self, const UOpNode* n) -> void {
    if (!budget) return;
    budget--;
    h = (h ^ (size_t(n->op) << 40 | size_t(n->dtype.id) << 8 | n->nsrc)) * 0x100000001B3ull;
    for (uint32_t i = 0; i < n->nsrc; i++) self(self, n->srcs()[i].get());
  };
  visit(visit, big_sink.get());
  return h;
}

bool is_canonical_buffer(const UOp& u) { return is_input_buffer(u) && u.arg().param().slot >= canonical_slot_base; }

void build_steps(Template& t) {
  const auto& topo = t.key.graph.topo_nodes();
  NodeMap<int64_t> step_of(topo.size() * 2);
  NodeMap<bool> reads_input(topo.size() * 2), needed(topo.size() * 2);
  needed[t.key.graph] = true;
  for (const UOpNode* n : topo) {
    bool r = is_canonical_buffer(UOp(n));
    for (uint32_t i = 0; i < n->nsrc && !r; i++) r = *reads_input.find(n->srcs()[i]);
    reads_input[UOp(n)] = r;
    if (r && !is_canonical_buffer(UOp(n)))
      for (uint32_t i = 0; i < n->nsrc; i++) needed[n->srcs()[i]] = true;
  }
  t.input_steps.resize(t.key.graph.topo_nodes().size());
  size_t inputs = 0;
  for (const UOpNode* n : topo) {
    UOp u(n);
    if (!*reads_input.find(u) && !needed.contains(u)) continue;
    step_of[u] = int64_t(t.steps.size());
    if (is_canonical_buffer(u)) {
      size_t slot = size_t(u.arg().param().slot - canonical_slot_base);
      t.input_steps[slot] = uint32_t(t.steps.size()), inputs = std::max(inputs, slot + 1);
      t.steps.push_back({Step::Input, n, 0});
    } else if (*reads_input.find(u)) {
      t.steps.push_back({Step::Walk, n, uint32_t(t.src_steps.size())});
      for (uint32_t i = 0; i < n->nsrc; i++) t.src_steps.push_back(uint32_t(*step_of.find(n->srcs()[i])));
    } else {
      t.steps.push_back({Step::Same, n, 0});
    }
  }
  t.input_steps.resize(inputs);
  for (auto& [k, v] : t.becomes) {
    int64_t* s = step_of.find(k);
    t.becomes_steps.push_back(s ? *s : -1);
  }
}

// the realize's graph walked in step with a template's: true when canonicalizing it would give the template's graph,
// with real[i] the graph's node at step i. A node is visited from its users before its sources, so every use agrees
bool match(const Template& t, const UOp& big_sink, std::vector<const UOpNode*>& real) {
  real.assign(t.steps.size(), nullptr);
  real.back() = big_sink.get();
  for (size_t i = t.steps.size(); i-- > 0;) {
    const UOpNode *n = real[i], *m = t.steps[i].node;
    if (!n) return false;
    switch (t.steps[i].kind) {
      case Step::Same:
        if (n != m) return false;
        break;
      case Step::Input: {
        UOp u(n), c(m);
        if (!is_input_buffer(u) || n->dtype != m->dtype || n->srcs()[0] != m->srcs()[0] || n->tag != m->tag) return false;
        ParamArg pa = u.arg().param();
        pa.slot = c.arg().param().slot;
        if (!(pa == c.arg().param())) return false;
        break;
      }
      case Step::Walk:
        if (n->op != m->op || n->dtype != m->dtype || n->nsrc != m->nsrc || !(n->arg == m->arg) || !(n->tag == m->tag)) return false;
        for (uint32_t k = 0; k < n->nsrc; k++) {
          const UOpNode*& r = real[t.src_steps[t.steps[i].first_src + k]];
          if (r && r != n->srcs()[k].get()) return false;
          r = n->srcs()[k].get();
        }
        break;
    }
  }
  // distinct canonical buffers must be distinct real ones (x op x is another structure than x op y)
  std::vector<const UOpNode*> inputs;
  for (uint32_t s : t.input_steps) inputs.push_back(real[s]);
  std::sort(inputs.begin(), inputs.end());
  return std::adjacent_find(inputs.begin(), inputs.end()) == inputs.end();
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

// the template's LINEAR on the realize's input buffers, and its becomes with the realize's own nodes as keys
Scheduled instantiate(const Template& tpl, const std::vector<UOp>& inputs, const std::function<UOp(size_t)>& real_key) {
  Instantiate inst{inputs, {}};
  std::vector<UOp> calls;
  calls.reserve(tpl.linear.src().size());
  for (const UOp& call : tpl.linear.src()) {
    std::vector<UOp> s{call.src(0)};
    for (size_t i = 1; i < call.src().size(); i++) s.push_back(inst(call.src(i)));
    calls.push_back(call.replace({.src = s}));
  }
  Scheduled out{tpl.linear.replace({.src = calls}), tpl.vars, {}};
  out.becomes.reserve(tpl.becomes.size());
  for (size_t i = 0; i < tpl.becomes.size(); i++) out.becomes.emplace_back(real_key(i), inst(tpl.becomes[i].second));
  return out;
}

}  // namespace

Scheduled schedule_tensor_graph(const UOp& big_sink) {
  auto st = std::chrono::steady_clock::now();
  auto direct = [&] {
    Callified call = transform_to_call(big_sink);
    auto [linear, vars] = create_linear_with_vars(call.call);
    return Scheduled{linear, vars, std::move(call.becomes)};
  };
  if (settings().SCACHE == 0) return direct();
  auto done = [&](Scheduled out) {
    engine_stats().schedules++, engine_stats().realize_cache_hits++;
    if (settings().DEBUG >= 1 && out.linear.src().size() > 1) {
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - st).count();
      std::printf("scheduled %5zu kernels in %8.2f ms |  realize cache hit\n", out.linear.src().size(), ms);
    }
    return out;
  };
  ScheduleKey knobs = ScheduleKey::of(UOp());
  size_t fp = fingerprint(big_sink, knobs);
  static std::vector<const UOpNode*> real;
  auto bk = buckets().find(fp);
  for (size_t b = 0; bk != buckets().end() && b < bk->second.size(); b++) {
    std::vector<Template*>& bucket = bk->second;
    const Template& tpl = *bucket[b];
    if (tpl.key.settings_key != knobs.settings_key || !match(tpl, big_sink, real)) continue;
    std::rotate(bucket.begin(), bucket.begin() + ptrdiff_t(b), bucket.begin() + ptrdiff_t(b) + 1);
    cache().find(tpl.key);  // now the most recently used
    std::vector<UOp> inputs;
    for (uint32_t s : tpl.input_steps) inputs.emplace_back(real[s]);
    return done(instantiate(tpl, inputs, [&](size_t i) {
      return tpl.becomes_steps[i] < 0 ? tpl.becomes[i].first : UOp(real[size_t(tpl.becomes_steps[i])]);
    }));
  }
  // no template of this fingerprint matched: key the canonical graph
  Canonical c = canonicalize(big_sink);
  if (!c.cacheable) return direct();
  ScheduleKey key{c.sink, knobs.settings_key};
  Template* tpl = cache().find(key);
  bool hit = tpl != nullptr;
  if (!hit) {
    Callified call = transform_to_call(c.sink);
    auto [linear, vars] = create_linear_with_vars(call.call);
    // an evicted template leaves its bucket (and an emptied bucket the map, which may be this one's)
    tpl = &cache().insert(key, Template{linear, vars, std::move(call.becomes), key, {}, {}, {}, {}, fp}, [](const ScheduleKey&, Template& t) {
      auto b = buckets().find(t.fingerprint);
      if (b == buckets().end()) return;
      std::erase(b->second, &t);
      if (b->second.empty()) buckets().erase(b);
    });
    build_steps(*tpl);
  }
  std::vector<Template*>& bucket = buckets()[fp];
  std::erase(bucket, tpl);
  bucket.insert(bucket.begin(), tpl);
  if (bucket.size() > bucket_size) bucket.pop_back();
  auto real_key = [&](size_t i) {
    const UOp& k = tpl->becomes[i].first;
    UOp* r = c.to_real.find(k);
    return r ? *r : k;
  };
  Scheduled out = instantiate(*tpl, c.inputs, real_key);
  return hit ? done(std::move(out)) : out;
}

}  // namespace tg
