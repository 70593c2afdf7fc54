// tinygrad's codegen/gpudims.py: add_gpudims (the CPU renderer has threads and no locals).
#include "codegen/gpudims.h"

#include <map>

#include "renderer/cstyle.h"
#include "uop/args.h"
#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;

UOp add_gpudims(const CStyleLanguage& ren, const UOp& s) {
  if (s.arg().none()) return UOp();
  std::vector<UOp> topo = s.toposort();
  for (auto& x : topo) if (x.op() == SPECIAL) return UOp();
  std::map<Arg::Ints, UOp> all_ranges;
  for (auto& x : topo)
    if (x.op() == RANGE) all_ranges[Arg::Ints(x.arg().ints().begin(), x.arg().ints().end() - 1)] = x;
  std::vector<Arg::Ints> global_dims, local_dims;
  for (auto& [k, x] : all_ranges) {
    AxisType t = axis_type(x);
    if (t == AxisType::GLOBAL || t == AxisType::THREAD) global_dims.push_back(k);
    if (t == AxisType::WARP || t == AxisType::LOCAL || t == AxisType::GROUP_REDUCE) local_dims.push_back(k);
  }
  if (global_dims.empty() && local_dims.empty()) return UOp();
  if (!local_dims.empty()) throw Error("add_gpudims: local dims on a renderer without locals (" + std::to_string(local_dims.size()) + ")");
  // the CPU renderer has threads: the first global dim is the core_id variable
  int64_t n = all_ranges[global_dims[0]].src(0).simplify().val().i;
  ParamArg pa{-1, dtypes::int32, std::pair<ConstVal, ConstVal>{int64_t(0), n - 1}, 1, "core_id", AddrSpace::ALU};
  UOp core_id = UOp::make(PARAM, dtypes::int32, {UOp::stack({})}, Arg(pa)).cast(dtypes::weakint);
  std::unordered_map<UOp, UOp> subs;
  for (auto& r : topo)
    if (r.op() == RANGE && axis_type(r) != AxisType::REDUCE &&
        Arg::Ints(r.arg().ints().begin(), r.arg().ints().end() - 1) == global_dims[0])
      subs[r] = core_id;
  (void)ren;
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
