// Multi-device values and the rewrite that runs them per device (tinygrad's schedule/multi.py and allreduce.py). tinygrad
// keeps one graph with a DEVICE range and launches each kernel once per device; here the device axis is unrolled, so
// the rewrite builds one ordinary graph per device and the scheduler sees nothing multi-device.
#include "schedule/multi.h"

#include <algorithm>
#include <numeric>

#include "schedule/indexing.h"
#include "tg/error.h"
#include "uop/movement.h"
#include "uop/multi_arg.h"
#include "uop/upat.h"
#include "util/env.h"
#include "util/error.h"

namespace tg {

// ***** 1. the representation *****

std::string device_tuple(const std::vector<std::string>& devices) {
  std::string r = "(";
  for (size_t i = 0; i < devices.size(); i++) r += (i ? ", " : "") + devices[i];
  return r + ")";
}
bool is_device_tuple(const std::string& device) { return device.starts_with("("); }
std::vector<std::string> parse_device_tuple(const std::string& device) {
  if (!is_device_tuple(device)) return {device};
  std::vector<std::string> r;
  for (size_t b = 1; b < device.size();) {
    size_t e = device.find_first_of(",)", b);
    r.push_back(device.substr(b, e - b));
    b = e + 2;
  }
  return r;
}

std::optional<Multi> as_multi(const UOp& u) {
  const MultiArg* ma = u.op() == Ops::MSTACK ? multi_arg(u.arg()) : nullptr;
  if (!ma) return std::nullopt;
  return Multi{std::vector<UOp>(u.src().begin(), u.src().end()), ma->axis, parse_device_tuple(ma->devices)};
}

UOp make_multi(std::vector<UOp> shards, std::optional<int64_t> axis, const std::vector<std::string>& devices) {
  return UOp::make(Ops::MSTACK, shards[0].dtype(), shards, make_arg(MultiArg(device_tuple(devices), axis)));
}

bool has_multi(const UOp& u) {
  for (auto* n : u.topo_nodes()) if (n->op == Ops::MSTACK && multi_arg(n->arg)) return true;
  return false;
}

// ***** 2. shard, gather, all-reduce *****

namespace {

std::string op_str(Ops op) { return std::string(op_name(op)); }

// slice i of n equal slices along axis
UOp chunk(const UOp& x, int64_t axis, size_t i, size_t n) {
  const Shape& sh = x.shape();
  int64_t sz = sh[size_t(axis)] / int64_t(n);
  std::vector<std::pair<int64_t, int64_t>> se;
  for (size_t a = 0; a < sh.size(); a++) se.push_back(int64_t(a) == axis ? std::pair(int64_t(i) * sz, int64_t(i + 1) * sz) : std::pair(int64_t(0), sh[a]));
  return x.shrink(se);
}

// the pieces (all on one device, equal shapes) put end to end along axis: each padded to its place, then summed
UOp cat(const std::vector<UOp>& pieces, int64_t axis) {
  size_t n = pieces.size(), nd = pieces[0].shape().size();
  int64_t sz = pieces[0].shape()[size_t(axis)];
  UOp acc;
  for (size_t k = 0; k < n; k++) {
    std::vector<std::pair<int64_t, int64_t>> pads(nd, {0, 0});
    pads[size_t(axis)] = {int64_t(k) * sz, int64_t(n - 1 - k) * sz};
    UOp p = pieces[k].pad(pads);
    acc = k == 0 ? p : acc.alu(p.dtype() == dtypes::bool_ ? Ops::OR : Ops::ADD, {p});
  }
  return acc;
}

// shard k as a value on device d (itself where it is there already)
UOp on_device(const Multi& m, size_t k, size_t d) { return k == d ? m.shards[k] : m.shards[k].copy_to_device(m.devices[d]); }

// the whole value on every device: replicated shards as they are, sharded ones gathered on each device
std::vector<UOp> allgather(const Multi& m) {
  if (!m.axis) return m.shards;
  std::vector<UOp> r;
  for (size_t d = 0; d < m.devices.size(); d++) {
    std::vector<UOp> pieces;
    for (size_t k = 0; k < m.shards.size(); k++) pieces.push_back(on_device(m, k, d));
    r.push_back(cat(pieces, *m.axis));
  }
  return r;
}

// ring all-reduce (handle_allreduce's RING): the flattened value in n chunks; chunk c is reduced on its way around the
// ring from device c and ends on device c-1 (reduce-scatter), then copied on around the ring to the others (all-gather)
std::vector<UOp> ring_allreduce(const std::vector<UOp>& partial, Ops op, const std::vector<std::string>& devices) {
  size_t n = devices.size();
  const Shape& shape = partial[0].shape();
  int64_t numel = 1, factor = 1;
  for (auto s : shape) numel *= s;
  for (int64_t f : {32, 16, 8, 4, 2}) if (numel % f == 0) { factor = f; break; }
  int64_t base = numel / factor / int64_t(n), left = numel / factor % int64_t(n), at = 0;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (size_t c = 0; c < n; c++) {
    int64_t sz = (int64_t(c) < left ? base + 1 : base) * factor;
    chunks.push_back({at, at + sz}), at += sz;
  }
  auto piece = [&](size_t k, size_t c) { return partial[k].reshape({numel}).shrink({chunks[c]}); };
  std::vector<std::vector<UOp>> on(n, std::vector<UOp>(n));  // on[d][c]: reduced chunk c on device d
  for (size_t c = 0; c < n; c++) {
    UOp red = piece(c, c);
    for (size_t step = 0; step + 1 < n; step++) {
      size_t dest = (c + step + 1) % n;
      red = red.copy_to_device(devices[dest]).alu(op, {piece(dest, c)});
    }
    on[(c + n - 1) % n][c] = red;
    for (size_t step = 0; step + 1 < n; step++) on[(c + step) % n][c] = red = red.copy_to_device(devices[(c + step) % n]);
  }
  std::vector<UOp> r;
  for (size_t d = 0; d < n; d++) {
    UOp acc;
    for (size_t c = 0; c < n; c++) {
      UOp p = on[d][c].pad({{chunks[c].first, numel - chunks[c].second}});
      acc = c == 0 ? p : acc.alu(p.dtype() == dtypes::bool_ ? Ops::OR : Ops::ADD, {p});
    }
    r.push_back(acc.reshape(shape));
  }
  return r;
}

// handle_allreduce: every device ends with all partial results combined. Naive: each device combines copies of all of
// them, in device order on each one so the replicas come out bitwise equal. The ring moves less data per device; as in
// tinygrad it is used from 3 devices and 256k elements (RING=2: always, RING=0: never; RING_ALLREDUCE_THRESHOLD)
std::vector<UOp> allreduce(std::vector<UOp> partial, Ops op, const std::vector<std::string>& devices) {
  for (auto& p : partial) p = p.contiguous();
  int64_t numel = 1, ring = getenv_int("RING", 1);
  for (auto s : partial[0].shape()) numel *= s;
  if (ring >= 2 || (ring >= 1 && devices.size() > 2 && numel > getenv_int("RING_ALLREDUCE_THRESHOLD", 256000)))
    return ring_allreduce(partial, op, devices);
  Multi m{partial, std::nullopt, devices};
  std::vector<UOp> r;
  for (size_t d = 0; d < devices.size(); d++) {
    UOp acc = on_device(m, 0, d);
    for (size_t k = 1; k < partial.size(); k++) acc = acc.alu(op, {on_device(m, k, d)});
    r.push_back(acc);
  }
  return r;
}

}  // namespace

UOp shard_uop(const UOp& x, const std::vector<std::string>& devices, std::optional<int64_t> axis) {
  size_t n = devices.size();
  if (axis && x.shape()[size_t(*axis)] % int64_t(n))
    throw Error("shard: multi axis uneven: shape " + shape_str(x.shape()) + " has " + std::to_string(x.shape()[size_t(*axis)]) + " on axis " +
                std::to_string(*axis) + ", not divisible by " + std::to_string(n) + " devices");
  std::vector<UOp> shards;
  for (size_t i = 0; i < n; i++) shards.push_back((axis ? chunk(x, *axis, i, n) : x).copy_to_device(devices[i]));
  return make_multi(shards, axis, devices);
}

UOp gather(const Multi& m, const std::string& device) {
  std::vector<UOp> pieces;
  for (auto& s : m.shards) pieces.push_back(s.device() == device ? s : s.copy_to_device(device));
  return m.axis ? cat(pieces, *m.axis) : pieces[0];
}

std::vector<UOp> mstack_gradient(const UOp& mstack, const UOp& grad) {
  auto ms = as_multi(mstack);
  if (!ms) internal_error("mstack_gradient: not a multi-device MSTACK");
  const Multi& self = *ms;
  UOp low = lower_multi(grad);
  auto g = as_multi(low);
  size_t n = self.shards.size();
  std::vector<UOp> r(n);
  if (!self.axis) {
    r[0] = g ? gather(*g, self.devices[0]) : low;
    return r;
  }
  if (g && g->axis == self.axis) return g->shards;
  std::vector<UOp> full = g ? allgather(*g) : std::vector<UOp>(n, low);
  for (size_t i = 0; i < n; i++) r[i] = chunk(full[i], *self.axis, i, n);
  return r;
}

// ***** 3. the rules: every op on multi values becomes the same op on each device's shards *****

namespace {

using enum Ops;

void same_devices(Ops op, const Multi& a, const Multi& b) {
  if (a.devices != b.devices)
    throw Error(op_str(op) + ": operands on different devices " + device_tuple(a.devices) + " and " + device_tuple(b.devices));
}

UOp alu_multi(const UOp& root) {
  std::vector<std::optional<Multi>> ms;
  const Multi* first = nullptr;
  for (auto& s : root.src()) ms.push_back(as_multi(s));
  for (auto& m : ms) if (m && !first) first = &*m;
  if (!first) return UOp();
  const auto& devs = first->devices;
  const Shape& out = root.shape();
  // the result is sharded as the last sharded operand (its axis right-aligned into the output), as UOp.axis
  std::optional<int64_t> axis;
  for (size_t i = 0; i < ms.size(); i++) {
    if (ms[i]) {
      same_devices(root.op(), *first, *ms[i]);
      if (ms[i]->axis) axis = *ms[i]->axis + int64_t(out.size() - root.src(i).shape().size());
    } else if (auto d = root.src(i).device()) {
      throw Error(op_str(root.op()) + ": a tensor on " + *d + " with one on " + device_tuple(devs) + " (shard it first)");
    }
  }
  size_t n = devs.size();
  std::vector<std::vector<UOp>> per(n);
  for (size_t i = 0; i < ms.size(); i++) {
    const Shape& ss = root.src(i).shape();
    std::optional<int64_t> src_axis;
    if (axis && *axis - int64_t(out.size() - ss.size()) >= 0) src_axis = *axis - int64_t(out.size() - ss.size());
    if (ms[i] && ms[i]->axis && ms[i]->axis == src_axis) {
      for (size_t d = 0; d < n; d++) per[d].push_back(ms[i]->shards[d]);
      continue;
    }
    std::vector<UOp> full = ms[i] ? allgather(*ms[i]) : std::vector<UOp>(n, root.src(i));
    bool split = src_axis && ss[size_t(*src_axis)] == out[size_t(*axis)];  // a broadcast axis stays whole
    for (size_t d = 0; d < n; d++) per[d].push_back(split ? chunk(full[d], *src_axis, d, n) : full[d]);
  }
  std::vector<UOp> shards;
  for (size_t d = 0; d < n; d++) shards.push_back(UOp::make(root.op(), root.dtype(), per[d], root.arg()));
  return make_multi(shards, axis, devs);
}

UOp reduce_multi(const UOp& root) {
  auto m = root.src().size() == 1 ? as_multi(root.src(0)) : std::nullopt;
  if (!m) return UOp();
  int64_t nax = root.arg().ints().at(1);
  // through rop: a shard's reduced axes may have size 1 (one row per device), which a REDUCE must not see
  std::vector<int64_t> axes(static_cast<size_t>(nax));
  std::iota(axes.begin(), axes.end(), 0);
  std::vector<UOp> local;
  for (auto& s : m->shards) local.push_back(s.rop(Ops(root.arg().ints().at(0)), axes));
  if (!m->axis) return make_multi(local, std::nullopt, m->devices);
  if (*m->axis >= nax) return make_multi(local, *m->axis - nax, m->devices);
  return make_multi(allreduce(local, Ops(root.arg().ints().at(0)), m->devices), std::nullopt, m->devices);
}

// each shard moved as the whole value is, with its own shape on the sharded axis
template <class F> UOp each(const Multi& m, std::optional<int64_t> axis, F f) {
  std::vector<UOp> shards;
  for (auto& s : m.shards) shards.push_back(f(s));
  return make_multi(shards, axis, m.devices);
}

UOp movement_multi(const UOp& root) {
  auto m = as_multi(root.src(0));
  if (!m) return UOp();
  const Shape &in = root.src(0).shape(), &out = root.shape();
  std::optional<int64_t> ax = m->axis;
  int64_t n = int64_t(m->devices.size());
  auto where = [&] { return shape_str(in) + " -> " + shape_str(out) + " of a tensor sharded on axis " + std::to_string(*ax); };
  switch (root.op()) {
    case RESHAPE: {
      if (!ax) return each(*m, ax, [&](const UOp& s) { return s.reshape(out); });
      // the sharded axis must survive the reshape: the same count of elements before it, and a size still split evenly
      int64_t before = 1, acc = 1;
      for (int64_t a = 0; a < *ax; a++) before *= in[size_t(a)];
      std::optional<int64_t> nax;
      for (size_t a = 0; a < out.size(); a++) {
        if (acc == before) nax = int64_t(a);
        acc *= out[a];
      }
      if (!nax || out[size_t(*nax)] % n) throw Error("reshape: " + where() + " moves items between shards");
      Shape local = out;
      local[size_t(*nax)] /= n;
      return each(*m, nax, [&](const UOp& s) { return s.reshape(local); });
    }
    case EXPAND: {  // EXPAND puts new axes in front
      Shape front(out.begin(), out.end() - int64_t(in.size()));
      return each(*m, ax ? std::optional(*ax + int64_t(front.size())) : ax, [&](const UOp& s) { return s.mop(EXPAND, front); });
    }
    case PERMUTE: {
      Shape perm = root.marg();
      std::optional<int64_t> nax;
      if (ax) nax = int64_t(std::find(perm.begin(), perm.end(), *ax) - perm.begin());
      return each(*m, nax, [&](const UOp& s) { return s.permute(perm); });
    }
    case PAD: case SHRINK: {
      auto pairs = root.marg_pairs();
      if (ax) {
        auto& [b, sz] = pairs[size_t(*ax)];
        bool whole = b == 0 && sz == in[size_t(*ax)] && (root.op() == SHRINK || sz == out[size_t(*ax)]);
        if (!whole && root.op() == SHRINK && sz > 0 && sz == in[size_t(*ax)] / n && b % sz == 0) {
          // exactly one shard: that shard, on every device (replicated)
          size_t k = size_t(b / sz);
          sz = in[size_t(*ax)] / n, b = 0;
          std::vector<UOp> shards;
          for (size_t d = 0; d < m->shards.size(); d++) shards.push_back(on_device(*m, k, d).mop_pairs(SHRINK, pairs));
          return make_multi(shards, std::nullopt, m->devices);
        }
        if (!whole) throw Error(op_str(root.op()) + ": " + where() + " changes the sharded axis");
        sz = in[size_t(*ax)] / n;
      }
      return each(*m, ax, [&](const UOp& s) { return s.mop_pairs(root.op(), pairs); });
    }
    case FLIP: {
      Shape f = root.marg();
      if (ax && f[size_t(*ax)]) throw Error("flip: " + where() + " flips the sharded axis");
      return each(*m, ax, [&](const UOp& s) { return s.mop(FLIP, f); });
    }
    case COPY: return gather(*m, root.arg().s());
    default: return UOp();
  }
}

// assign into a multi-device tensor (store_after_multi): each shard stores its own part of the value
UOp after_multi(const UOp& root) {
  auto d = as_multi(root.src(0));
  if (!d || root.src().size() != 2 || root.src(1).op() != STORE || root.src(1).src(0) != root.src(0)) return UOp();
  const UOp& val = root.src(1).src(1);
  auto vm = as_multi(val);
  if (vm) same_devices(STORE, *d, *vm);
  else if (auto dev = val.device()) throw Error("assign: a tensor on " + *dev + " into one on " + device_tuple(d->devices) + " (shard it first)");
  size_t n = d->devices.size();
  std::vector<UOp> part;
  if (vm && vm->axis == d->axis) part = vm->shards;
  else {
    part = vm ? allgather(*vm) : std::vector<UOp>(n, val);
    if (d->axis) for (size_t i = 0; i < n; i++) part[i] = chunk(part[i], *d->axis, i, n);
  }
  std::vector<UOp> shards;
  for (size_t i = 0; i < n; i++) shards.push_back(d->shards[i].after({d->shards[i].store(part[i])}));
  return make_multi(shards, d->axis, d->devices);
}

const PatternMatcher& multi_pm() {
  static const PatternMatcher pm{
      // STACK (a new leading axis) shards as an elementwise op does: its sources right-align into the result
      UPat(GroupOp::Elementwise | OpSet{CONTIGUOUS, CONTIGUOUS_BACKWARD, DETACH, STACK}, {}, {}, {}, "x") >> [](M m) { return alu_multi(m["x"]); },
      UPat(REDUCE, {}, {}, {}, "x") >> [](M m) { return reduce_multi(m["x"]); },
      UPat(AFTER, {}, {}, {}, "x") >> [](M m) { return after_multi(m["x"]); },
      UPat(OpSet{RESHAPE, EXPAND, PERMUTE, PAD, SHRINK, FLIP, COPY}, {}, {}, {}, "x") >> [](M m) { return movement_multi(m["x"]); },
  };
  return pm;
}

}  // namespace

UOp lower_multi(const UOp& u) {
  UOp ret = graph_rewrite(u, multi_pm());
  // anything still reading a multi value is an op the rules do not run per device
  for (auto& x : ret.toposort()) {
    if (as_multi(x)) continue;
    for (auto& s : x.src())
      if (as_multi(s)) throw Error(op_str(x.op()) + ": not supported on a multi-device tensor (on " + s.device().value_or("?") + ")");
  }
  return ret;
}

}  // namespace tg
