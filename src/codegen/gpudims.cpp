// tinygrad's codegen/gpudims.py: add_gpudims. A CPU renderer with threads gets the core_id variable for its first
// global range; a GPU renderer gets SPECIAL group / local ids (gidx/lidx), or global ids (idx) with NOLOCALS, grouped
// or split to fit the device's launch limits.
#include "codegen/gpudims.h"

#include <map>

#include "renderer/cstyle.h"
#include "uop/args.h"
#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
using Limits = std::array<int64_t, 3>;

int64_t dim_max(const UOp& d) { return d.vmax().as_int(); }

// merge neighbouring dims until they fit: (a, b, c, d) -> (ab, c, d)
std::optional<std::vector<UOp>> group_dims(std::vector<UOp> dims, const Limits& max) {
  auto over = [&] {
    if (dims.size() > max.size()) return true;
    for (size_t i = 0; i < dims.size(); i++) if (dim_max(dims[i]) > max[i]) return true;
    return false;
  };
  while (over()) {
    bool merged = false;
    for (size_t i = 0; i < max.size() && !merged; i++)
      if (i + 1 < dims.size() && dim_max(dims[i]) * dim_max(dims[i + 1]) <= max[i]) {
        dims[i] = (dims[i] * dims[i + 1]).simplify();
        dims.erase(dims.begin() + int64_t(i) + 1);
        merged = true;
      }
    if (!merged) return std::nullopt;
  }
  return dims;
}

// move factors of a dim over its limit into the next dim: (a,) -> (b, c)
std::vector<UOp> split_dims(const std::vector<UOp>& dims, const Limits& max) {
  bool fits = true;
  for (size_t i = 0; i < dims.size(); i++) fits &= dim_max(dims[i]) <= max[i];
  if (fits) return dims;
  std::vector<int64_t> d(3, 1);
  for (size_t i = 0; i < dims.size(); i++) {
    if (dims[i].op() != CONST) throw Error("gpudims: cannot split the symbolic launch dim " + dims[i].render(false));
    d[i] = dims[i].val().as_int();
  }
  for (size_t i = 0; i < 3; i++)
    while (d[i] > max[i]) {
      int64_t div = 1;
      for (int64_t c = 2; c * c <= d[i] || c == 2; c++) if (d[i] % c == 0) { div = c; break; }
      if (div == 1) throw Error("gpudims: cannot fit the launch dim " + std::to_string(d[i]) + " in " + std::to_string(max[i]));
      d[i] /= div, d[(i + 1) % 3] *= div;
    }
  std::vector<UOp> out;
  for (size_t i = 0; i < (d[2] == 1 ? 2u : 3u); i++) out.push_back(UOp::const_(d[i], dtypes::weakint));
  return out;
}

std::vector<UOp> grouped_dims(const std::string& prefix, std::vector<UOp> dims, const Limits& max, bool reverse) {
  if (reverse) {
    std::reverse(dims.begin(), dims.end());
    std::vector<UOp> r = grouped_dims(prefix, dims, max, false);
    std::reverse(r.begin(), r.end());
    return r;
  }
  std::vector<UOp> limited = group_dims(dims, max).value_or(dims);
  if (limited.size() > max.size()) throw Error("gpudims: cannot fit " + std::to_string(dims.size()) + " launch dims in " + std::to_string(max.size()));
  if (limited == dims) limited = split_dims(dims, max);
  auto prod_from = [](const std::vector<UOp>& v, size_t i) {
    UOp p = UOp::const_(int64_t(1), dtypes::weakint);
    for (size_t j = i; j < v.size(); j++) p = p * v[j];
    return p.simplify();
  };
  UOp flat = UOp::const_(int64_t(0), dtypes::weakint);
  for (size_t i = 0; i < limited.size(); i++)
    flat = flat + UOp::make(SPECIAL, dtypes::weakint, {limited[i]}, Arg(prefix + std::to_string(i))) * prod_from(limited, i + 1);
  std::vector<UOp> out;
  for (size_t i = 0; i < dims.size(); i++) out.push_back(i == 0 ? (flat / prod_from(dims, 1)).simplify() : (flat / prod_from(dims, i + 1) % dims[i]).simplify());
  return out;
}

UOp add_gpudims(const CStyleLanguage& ren, const UOp& s) {
  if (s.arg().none()) return UOp();
  std::vector<UOp> topo = s.toposort();
  for (auto& x : topo) if (x.op() == SPECIAL) return UOp();
  auto key_of = [](const UOp& r) { return Arg::Ints(r.arg().ints().begin(), r.arg().ints().end() - 1); };
  std::map<Arg::Ints, UOp> all_ranges;
  for (auto& x : topo) if (x.op() == RANGE) all_ranges[key_of(x)] = x;
  std::vector<Arg::Ints> global_dims, local_dims;
  for (auto& [k, x] : all_ranges) {
    AxisType t = axis_type(x);
    if (t == AxisType::GLOBAL || t == AxisType::THREAD) global_dims.push_back(k);
    if (t == AxisType::WARP || t == AxisType::LOCAL || t == AxisType::GROUP_REDUCE) local_dims.push_back(k);
  }
  if (global_dims.empty() && local_dims.empty()) return UOp();
  std::vector<UOp> global_shape, local_shape;
  for (auto& k : global_dims) global_shape.push_back(all_ranges[k].src(0).simplify());
  for (auto& k : local_dims) local_shape.push_back(all_ranges[k].src(0).simplify());

  std::vector<UOp> idxs;
  if (ren.has_threads) {
    if (!local_dims.empty()) throw Error("add_gpudims: local dims on a renderer without locals (" + std::to_string(local_dims.size()) + ")");
    int64_t n = global_shape[0].val().i;
    ParamArg pa{-1, dtypes::int32, std::pair<ConstVal, ConstVal>{int64_t(0), n - 1}, 1, "core_id", AddrSpace::ALU};
    idxs.push_back(UOp::make(PARAM, dtypes::int32, {UOp::stack({})}, Arg(pa)).cast(dtypes::weakint));
  } else if (const KernelInfo* ki = kernel_info(s); ki && ki->dont_use_locals) {
    if (!local_dims.empty()) throw Error("add_gpudims: NOLOCALS on a kernel with local dims");
    idxs = grouped_dims("idx", global_shape, ren.global_max, true);
  } else {
    idxs = grouped_dims("gidx", global_shape, ren.global_max, true);
    std::vector<UOp> l = grouped_dims("lidx", local_shape, ren.local_max, false);
    idxs.insert(idxs.end(), l.begin(), l.end());
  }

  std::vector<Arg::Ints> dims = global_dims;
  dims.insert(dims.end(), local_dims.begin(), local_dims.end());
  std::unordered_map<UOp, UOp> subs;
  for (auto& r : topo) {
    // a store to global memory that no local index reaches is done by local thread 0 only
    if (r.op() == STORE && !local_dims.empty() && r.src(0).op() == INDEX && r.src(0).src(0).addrspace() == AddrSpace::GLOBAL) {
      const UOp& idx = r.src(0);
      std::vector<UOp> missing;
      auto rngs = idx.ranges();
      for (auto& k : local_dims) if (std::find(rngs.begin(), rngs.end(), all_ranges[k]) == rngs.end()) missing.push_back(all_ranges[k]);
      if (!missing.empty()) {
        if (idx.src().size() != 2) throw Error("add_gpudims: a global store's index has " + std::to_string(idx.src().size()) + " sources");
        UOp mask = missing[0].eq(lit(0));
        for (size_t i = 1; i < missing.size(); i++) mask = mask & missing[i].eq(lit(0));
        subs[idx] = idx.replace({.src = std::vector{idx.src(0), idx.src(1).valid(mask)}});
      }
    }
    if (r.op() != RANGE || axis_type(r) == AxisType::REDUCE) continue;
    auto it = std::find(dims.begin(), dims.end(), key_of(r));
    // with threads only the first global dim is launched (core_id)
    if (it != dims.end() && (!ren.has_threads || it == dims.begin())) subs[r] = idxs[size_t(it - dims.begin())];
  }
  return s.substitute(subs);
}
}  // namespace

const PatternMatcher& pm_add_gpudims() {
  static const PatternMatcher pm{
      U(SINK, {}, {}, {}, "s") >> [](M m) { return add_gpudims(m.ctx<const CStyleLanguage>(), m["s"]); },
  };
  return pm;
}

}  // namespace tg
