// tinygrad's codegen/late/coalesce.py: indexing_simplify, pm_simplify_add_image (its cast folds) and memory_coalescing.
#include "codegen/late/coalesce.h"

#include <algorithm>
#include <map>

#include "uop/pattern_helpers.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
}  // namespace

const PatternMatcher& indexing_simplify() {
  static const PatternMatcher pm = PatternMatcher{
      U(INDEX, {}, {V("buf"), invalid_gate()}) >> [](M m) {
        const UOp &x = m["x"], &cond = m["cond"];
        // loads inside the index stand in as opaque values: their own gates stay even where the outer gate implies
        // them, since a load in the index is rendered before the outer gate is tested (it would read out of bounds)
        std::unordered_map<UOp, UOp> hide, show;
        for (const UOp* r : {&x, &cond})  // the gate's loads too: it bounds expressions of the same loads
          for (auto& u : r->toposort()) if (u.op() == LOAD && !hide.count(u)) {
            UOp h = opaque_value("load" + std::to_string(hide.size()), u.dtype(), u.vmin(), u.vmax());
            hide[u] = h, show[h] = u;
          }
        UOp hx = hide.empty() ? x : x.substitute(hide), idx = uop_given_valid(hide.empty() ? cond : cond.substitute(hide), hx);
        if (idx == hx || idx == hx.simplify()) return UOp();
        return m["buf"].index({(hide.empty() ? idx : idx.substitute(show)).valid(cond)});
      },
  }.pure();
  return pm;
}

const PatternMatcher& pm_simplify_add_image() {
  static const PatternMatcher pm = PatternMatcher{
      U(LOAD, dtypes::float16, {U(INDEX, dtypes::float32, {}, {}, "x", true)}) >> [](M m) { return m["x"].load().cast(dtypes::float16); },
      U(INDEX, dtypes::float32, {}, {}, "x", true).store(V("d", dtypes::float16)) >> [](M m) { return m["x"].store(m["d"].cast(dtypes::float32)); },
      V("x", dtypes::float32).cast(DTypeSet(dtypes::float16)).cast(DTypeSet(dtypes::float32)) >> [](M m) { return m["x"]; },
  }.pure();
  return pm;
}

UOp memory_coalescing(const UOp& sink, const CStyleLanguage& ren) {
  // float accumulators fold too where the renderer aligns register arrays: the slices of a SIMD upcast become vector
  // loads and stores, which pin clang's SLP vectorizer to those lanes (left to itself it may pick others, 5x slower)
  bool simd = ren.simd_vectors();
  struct Key { Ops op; UOp buf; UOp root; int kind; UOp valid; };  // kind: 0 a node, 1 INVALID, 2 CONST
  std::vector<std::pair<Key, std::map<int64_t, std::vector<UOp>>>> memory;
  for (auto& u : sink.toposort()) {
    if (u.op() != LOAD && u.op() != STORE) continue;
    if (u.src().size() != (u.op() == STORE ? 2u : 1u)) throw Error("memory coalescing does not support gated loads/stores");
    if (u.src(0).op() != INDEX || u.src(0).src().size() != 2) throw Error("memory coalescing should be on INDEX, not " + std::string(op_name(u.src(0).op())));
    UOp buf = u.src(0).src(0), idx_u = u.src(0).src(1);
    if (buf.addrspace() == AddrSpace::REG && !(simd && buf.dtype() == dtypes::float32)) continue;
    UOp idx = idx_u.get_idx(), valid = idx_u.get_valid(), root;
    int kind = 0;
    int64_t arg = 0;
    if (idx.op() == ADD && idx.src(1).op() == CONST && idx.src(1).val().is_int()) root = idx.src(0), arg = idx.src(1).val().i;
    else if (idx.op() == ADD && idx.src(0).op() == CONST && idx.src(0).val().is_int()) root = idx.src(1), arg = idx.src(0).val().i;
    else if (idx.op() == CONST && idx.val().is_invalid()) kind = 1;
    else if (idx.op() == CONST) kind = 2, arg = idx.val().as_int();
    else root = idx;
    Key k{u.op(), buf, root, kind, valid};
    auto it = std::find_if(memory.begin(), memory.end(), [&](auto& e) {
      return e.first.op == k.op && e.first.buf == k.buf && e.first.root == k.root && e.first.kind == k.kind && e.first.valid == k.valid;
    });
    if (it == memory.end()) { memory.push_back({k, {}}); it = memory.end() - 1; }
    it->second[arg].push_back(u);
  }
  std::unordered_map<UOp, UOp> replacements;
  for (auto& [k, offsets] : memory) {
    std::vector<int64_t> lengths;
    bool any_offset = false;
    DType dt = k.buf.dtype();
    int64_t w = ren.simd_width();
    if (k.buf.addrspace() == AddrSpace::REG) lengths = {w, 8, 4};  // the renderer aligns float register arrays of 4 and more
    else if (simd && dt == dtypes::float32) lengths = {w, 8, 4, 2};  // lanes as wide as the accumulators'
    // bytes (int8 weights, quantized blocks) and halves as a row's lanes: one load that clang converts to floats, where it
    // gathers loose bytes one insert at a time. The SIMD kernels' vector types are element aligned: any offset does
    else if (simd && ((dt.itemsize() == 1 && dt.is_int()) || dt == dtypes::float16)) lengths = {w, 8, 4}, any_offset = true;
    // 32-bit words as a row's lanes (ggml_dot's packed bytes, 4 a lane): one register of them
    else if (simd && (dt == dtypes::int32 || dt == dtypes::uint32)) lengths = {w, 8, 4, 2}, any_offset = true;
    else if (dt == dtypes::float32 || dt == dtypes::float16 || dt == dtypes::int32 || dt == dtypes::uint32) lengths = {4, 2};
    // fp8 as tinygrad, where the dialect has fp8 types (CUDA's); stored as bytes they stay scalar (their casts are bit ops)
    else if (dt.is_fp8() && ren.render_dtype(dt, 1, AddrSpace::REG) != "unsigned char" && ren.render_dtype(dt, 1, AddrSpace::REG) != "uchar") lengths = {4, 2};
    lengths.push_back(1);
    std::vector<std::vector<int64_t>> grouped;
    int64_t prev = 0;
    for (auto& [o, _] : offsets) {
      if (grouped.empty() || o != prev + 1) grouped.emplace_back();
      grouped.back().push_back(o), prev = o;
    }
    for (auto full : grouped) {
      while (!full.empty()) {
        UOp offset = k.kind == 0 ? k.root + full[0] : UOp::const_(int64_t(full[0]));
        int64_t length = 1;
        for (auto l : lengths) if (l <= int64_t(full.size()) && (any_offset || offset.divides(l))) { length = l; break; }
        std::vector<int64_t> grp(full.begin(), full.begin() + length);
        offset = offset.valid(k.valid);
        UOp idx = grp.size() > 1 ? UOp::make(SHRINK, dt, {k.buf, offset, cint(int64_t(grp.size()))}) : k.buf.index({offset});
        if (k.op == STORE) {
          std::vector<UOp> datas;
          for (auto g : grp) {
            if (offsets[g].size() != 1) throw Error("memory coalescing: multiple stores to one address");
            datas.push_back(offsets[g][0].src(1));
          }
          UOp store = idx.store(datas.size() > 1 ? UOp::stack(datas) : datas[0]);
          for (auto g : grp) replacements[offsets[g][0]] = store;
        } else {
          UOp ld = idx.load();
          for (size_t i = 0; i < grp.size(); i++)
            for (auto& oo : offsets[grp[i]]) replacements[oo] = grp.size() > 1 ? ld.index({cint(int64_t(i))}) : ld;
        }
        full.erase(full.begin(), full.begin() + length);
      }
    }
  }
  return sink.substitute(replacements);
}

}  // namespace tg
