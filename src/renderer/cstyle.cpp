// C-style renderers (tinygrad's renderer/cstyle.py): string rules per node, one pass over the linearized list.
#include <cstring>
#include "renderer/cstyle.h"
#include "uop/args.h"
#include "uop/nodemap.h"
#include "uop/pattern_helpers.h"
#include "util/env.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <thread>

namespace tg {

// ***** 1. properties of linearized nodes *****

namespace {
int64_t dim_of(const UOp& x) {
  if (x.op() == Ops::CONST && x.val().is_int()) return x.val().i;
  if (x.op() == Ops::CAST && x.src(0).op() == Ops::CONST && x.src(0).val().is_int()) return x.src(0).val().i;
  const ConstVal& m = x.vmax();  // a symbolic size: its max (tinygrad's max_shape)
  return m.is_float() ? int64_t(m.f) : m.i;
}
std::vector<int64_t> as_max_shape(const UOp& u) {
  if (u.op() != Ops::STACK) return {dim_of(u)};
  std::vector<int64_t> s;
  for (auto& x : u.src()) s.push_back(dim_of(x));
  return s;
}
std::vector<int64_t> broadcast(const std::vector<std::vector<int64_t>>& shapes) {
  size_t nd = 0;
  for (auto& s : shapes) nd = std::max(nd, s.size());
  std::vector<int64_t> out(nd, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); i++)
      if (s[i] != 1) out[nd - s.size() + i] = s[i];
  return out;
}

std::optional<std::vector<int64_t>> max_shape_impl(const UOp& u) {
  using enum Ops;
  auto src = [&](size_t i) { return lin_max_shape(u.src(i)); };
  auto need = [&](size_t i) -> const std::vector<int64_t>& {
    const auto& s = lin_max_shape(u.src(i));
    if (!s) throw Error("renderer: " + std::string(op_name(u.op())) + " needs a shaped source, " + std::string(op_name(u.src(i).op())) + " has none");
    return *s;
  };
  std::optional<std::vector<int64_t>> r;
  switch (u.op()) {
    case IF: case BARRIER: case SINK: case REWRITE_ERROR: case ENDIF: case GROUP: case LINEAR: case PROGRAM: case SOURCE: case TUPLE:
    case FUNCTION: case CUSTOM_FUNCTION: case PYLITERAL: case GETTUPLE: break;
    case CALL: case INS: if (u.dtype() != dtypes::void_) r = std::vector<int64_t>{}; break;
    case NOOP: if (!u.src().empty()) r = src(0); break;
    case INDEX: {
      std::vector<int64_t> s;
      for (size_t i = 1; i < u.src().size(); i++) { const auto& x = need(i); s.insert(s.end(), x.begin(), x.end()); }
      const auto& b = need(0);
      if (u.src().size() - 1 < b.size()) s.insert(s.end(), b.begin() + (u.src().size() - 1), b.end());
      r = s;
      break;
    }
    case STACK: {
      std::vector<int64_t> s;
      if (!u.src().empty()) { s.push_back(int64_t(u.src().size())); const auto& x = need(0); s.insert(s.end(), x.begin(), x.end()); }
      r = s;
      break;
    }
    case CONST: case GETADDR: case RANGE: case SPECIAL: r = std::vector<int64_t>{}; break;
    case BUFFER: r = u.src().empty() ? std::vector<int64_t>{} : as_max_shape(u.src(0)); break;
    case PARAM: r = u.src().empty() || u.src(0).op() == NOOP ? std::vector<int64_t>{} : as_max_shape(u.src(0)); break;
    case CUSTOM: case CUSTOMI: {
      if (u.dtype() == dtypes::void_) break;
      std::vector<std::vector<int64_t>> ins;
      for (size_t i = 0; i < u.src().size(); i++) if (auto s = src(i)) ins.push_back(*s);
      if (!ins.empty()) r = broadcast(ins);
      break;
    }
    case MSTACK: case MSELECT: case DETACH: case CONTIGUOUS: case CONTIGUOUS_BACKWARD: case AFTER: case LOAD: case COPY: case ALLREDUCE:
    case STORE: case END: r = src(0); break;
    case BITCAST: {
      auto ps = src(0);
      if (!ps) break;
      int out_sz = u.dtype().itemsize(), in_sz = u.src(0).dtype().itemsize();
      if (out_sz != in_sz && !ps->empty()) ps->back() = ps->back() * in_sz / out_sz;
      r = ps;
      break;
    }
    case SHRINK: r = as_max_shape(u.src(2)); break;  // (buffer, offset, size)
    case WMMA: {
      std::vector<std::vector<int64_t>> lead;
      for (size_t i = 0; i < 3; i++) lead.push_back(std::vector<int64_t>(need(i).begin(), need(i).end() - 1));
      auto b = broadcast(lead);
      b.push_back(need(2).back());
      r = b;
      break;
    }
    default:
      if (GroupOp::Unary.has(u.op()) || u.op() == CAST) r = src(0);
      else if (GroupOp::Broadcastable.has(u.op())) {
        bool scalar = true;  // the common case: nothing to broadcast, no vectors to build
        for (size_t i = 0; i < u.src().size(); i++) scalar &= need(i).empty();
        if (scalar) r = std::vector<int64_t>{};
        else {
          std::vector<std::vector<int64_t>> ins;
          for (size_t i = 0; i < u.src().size(); i++) ins.push_back(need(i));
          r = broadcast(ins);
        }
      } else throw Error("renderer: no shape handling for " + std::string(op_name(u.op())));
  }
  return r;
}
}  // namespace

const std::optional<Shape>& lin_max_shape(const UOp& u) {
  const UOpNode* n = u.get();
  n->props();
  if (!n->cache->max_shape) n->cache->max_shape = max_shape_impl(u);
  return *n->cache->max_shape;
}
int64_t lin_max_numel(const UOp& u) {
  const auto& s = lin_max_shape(u);
  int64_t n = 1;
  if (s) for (auto x : *s) n *= x;
  return n;
}

// ***** 2. the string rules *****

const std::string& RenderCtx::operator[](const UOp& u) const {
  if (const std::string* s = r->find(u)) return *s;
  throw Error("renderer: " + std::string(op_name(u.op())) + " is used before it is rendered");
}

UOp emit(M m, std::string s) {
  m.ctx<RenderCtx>().out = std::move(s);
  // never freed: it may outlive the hash-cons table at exit
  static const UOp* marker = new UOp(UOp::make(Ops::NOOP, dtypes::void_, {}, Arg("rendered")));
  return *marker;
}

namespace {
using enum Ops;
RenderCtx& cx(M m) { return m.ctx<RenderCtx>(); }
const CStyleLanguage& rn(M m) { return *m.ctx<RenderCtx>().ren; }

// Python's str() of a literal (ints print as ints, floats as repr)
std::string pystr(const ConstVal& v) { return v.is_bool() ? (v.i ? "1" : "0") : v.str(); }
std::string truncated(const ConstVal& v, DType dt) {
  int64_t i = v.is_float() ? int64_t(v.f) : v.i;
  if (dt == dtypes::uint64) return std::to_string(uint64_t(i));
  if (dt == dtypes::uint32) return std::to_string(uint32_t(i));
  return std::to_string(i);
}

}  // namespace

std::string wmma_name(const UOp& u) {
  const WmmaArg* w = wmma_arg(u);
  if (!w) throw Error("renderer: WMMA without its arg");
  std::string s = "WMMA_" + std::to_string(w->dims[0]) + "_" + std::to_string(w->dims[1]) + "_" + std::to_string(w->dims[2]) + "_" +
                  std::string(w->dtype_in.c_name()) + "_" + std::string(u.dtype().c_name());
  std::replace(s.begin(), s.end(), ' ', '_');
  return s;
}

namespace {
// Python's str.format with "{}" and "{N}" fields, "{{" and "}}" escapes
std::string pyformat(const std::string& f, const std::vector<std::string>& args) {
  std::string out;
  size_t auto_i = 0;
  for (size_t i = 0; i < f.size(); i++) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') { out += '{'; i++; continue; }
    if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') { out += '}'; i++; continue; }
    if (f[i] == '{') {
      size_t j = f.find('}', i);
      if (j == std::string::npos) throw Error("renderer: bad CUSTOM format '" + f + "'");
      std::string k = f.substr(i + 1, j - i - 1);
      size_t idx = k.empty() ? auto_i++ : size_t(std::stoul(k));
      if (idx >= args.size()) throw Error("renderer: CUSTOM format '" + f + "' wants more sources");
      out += args[idx];
      i = j;
      continue;
    }
    out += f[i];
  }
  return out;
}

PatternMatcher base_rewrite() {
  UPat c = UPat::cvar("c");
  auto castc = [&](DTypeSet dts) { return UPat(CAST, dts, {c}, {}, "x"); };
  return PatternMatcher{
      // local/reg buffers
      UPat(BUFFER, {}, {}, {}, "x", true) >> [](M m) { return emit(m, rn(m).render_buffer(cx(m), m["x"])); },
      // range/loop/if/endif
      UPat(RANGE, dtypes::void_, {}, {}, "x", true) >> [](M m) { return emit(m, "for (;;) {"); },
      UPat(RANGE, {}, {}, {}, "x", true) >> [](M m) {
        const UOp& x = m.root();
        const std::string& n = cx(m)[x];
        return emit(m, "for (" + rn(m).render_dtype(x.dtype(), 1, AddrSpace::REG) + " " + n + " = 0; " + n + " < " + cx(m)[x.src(0)] +
                           "; " + n + "++) {");
      },
      UPat(END, {}, {UPat(), UPat(RANGE), UPat::var("c", dtypes::bool_)}) >>
          [](M m) { return emit(m, "  if (!(" + cx(m)[m["c"]] + ")) { break; }\n}"); },
      UPat(IF, {}, {}, {}, "x", true) >> [](M m) { return emit(m, "if (" + cx(m)[m.root().src(0)] + ") {"); },
      UPat(OpSet{ENDIF, END}, {}, {}, {}, "", true) >> [](M m) { return emit(m, "}"); },

      // literals: a CAST of a CONST
      // bfloat16 stored as unsigned short (no __bf16 in the compiler): the literal is its bit pattern
      castc(dtypes::bfloat16) >> [](M m) -> UOp {
        auto it = rn(m).type_map.find(DTypeId::bfloat16);
        if (it == rn(m).type_map.end() || it->second != "unsigned short") return {};
        float f = float(m["c"].val().as_double());
        uint32_t b;
        std::memcpy(&b, &f, 4);
        uint32_t bits = std::isnan(f) ? 0x7fc0u : (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
        return emit(m, "((unsigned short)" + std::to_string(bits) + "u)");
      },
      // fp8 stored as a byte (every dialect but CUDA's OCP types): the literal is its bit pattern
      castc(dtypes::fp8s()) >> [](M m) -> UOp {
        std::string t = rn(m).render_dtype(m["x"].dtype(), 1, AddrSpace::REG);
        if (t != "unsigned char" && t != "uchar") return {};
        return emit(m, "((" + t + ")" + std::to_string(float_to_fp8(m["c"].val().as_double(), m["x"].dtype())) + "u)");
      },
      castc(dtypes::floats()) >> [](M m) -> UOp {
        double v = m["c"].val().as_double();
        if (std::isfinite(v)) return {};
        const CStyleLanguage& r = rn(m);
        return emit(m, "(" + r.render_cast(m["x"], std::isnan(v) ? r.nan : v > 0 ? r.infinity : "-" + r.infinity) + ")");
      },
      castc(dtypes::float32) >> [](M m) { return emit(m, pystr(m["c"].val()) + "f"); },
      castc(dtypes::int64) >> [](M m) { return emit(m, pystr(m["c"].val()) + "l"); },
      castc(dtypes::uint64) >> [](M m) { return emit(m, truncated(m["c"].val(), dtypes::uint64) + "ul"); },
      castc(dtypes::uint32) >> [](M m) { return emit(m, truncated(m["c"].val(), dtypes::uint32) + "u"); },
      castc(dtypes::bool_) >> [](M m) { return emit(m, m["c"].val().truthy() ? "1" : "0"); },
      castc(dtypes::fp8s() | DTypeSet{dtypes::bfloat16, dtypes::float16}) >>
          [](M m) { return emit(m, "(" + rn(m).render_cast(m["x"], pystr(m["c"].val()) + "f") + ")"); },
      castc({dtypes::uint8, dtypes::uint16}) >> [](M m) { return emit(m, "(" + rn(m).render_cast(m["x"], pystr(m["c"].val()) + "u") + ")"); },
      castc({dtypes::int8, dtypes::int16}) >> [](M m) { return emit(m, "(" + rn(m).render_cast(m["x"], pystr(m["c"].val())) + ")"); },
      castc({}) >> [](M m) { return emit(m, pystr(m["c"].val())); },

      // casting
      UPat(CAST, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        const UOp& x = m.root();
        // (SIMD kernels' vector values, pm_vector_lanes: clang's vector casts convert each lane; a C cast reinterprets)
        if (lin_max_numel(x) > 1 && (x.addrspace() == AddrSpace::REG || cx(m).simd))
          return emit(m, "__builtin_convertvector(" + cx(m)[x.src(0)] + ", " + rn(m).render_type(x) + ")");
        return {};
      },
      UPat(CAST, {}, {}, {}, "x", true) >> [](M m) { return emit(m, "(" + rn(m).render_cast(m.root(), cx(m)[m.root().src(0)]) + ")"); },
      UPat(BITCAST, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        const UOp& x = m.root();
        auto as = x.addrspace();
        if (as == AddrSpace::GLOBAL || as == AddrSpace::LOCAL)
          return emit(m, "((" + rn(m).render_dtype(x.dtype(), 1, *as) + ")(" + cx(m)[x.src(0)] + "))");
        return emit(m, "__builtin_bit_cast(" + rn(m).render_type(x) + ", (" + rn(m).render_type(x.src(0)) + ")(" + cx(m)[x.src(0)] + "))");
      },

      // GPU stuff
      UPat(BARRIER, {}, {}, {}, "", true) >> [](M m) { return emit(m, rn(m).barrier); },
      UPat(SPECIAL, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        const UOp& x = m.root();
        const std::string& nm = x.arg().s();
        auto it = nm.empty() ? rn(m).code_for_workitem.end() : rn(m).code_for_workitem.find(nm.front());
        if (it == rn(m).code_for_workitem.end()) return {};
        return emit(m, it->second(nm.substr(nm.size() - 1)) + "; /* " + x.src(0).render(false) + " */");
      },

      // INDEX / SHRINK
      UPat(INDEX, {}, {UPat::var("buf"), UPat::var("idx")}) >> [](M m) { return emit(m, rn(m).render_index(cx(m), m["buf"], m["idx"])); },
      UPat(SHRINK, {}, {UPat::var("buf"), UPat::var("idx"), UPat(CAST, {}, {UPat::cvar()})}) >>
          [](M m) { return emit(m, rn(m).render_index(cx(m), m["buf"], m["idx"])); },
      UPat(STACK, {}, {}, {}, "x", true) >> [](M m) {
        const CStyleLanguage& r = rn(m);
        std::string head = r.float4_fmt;
        if (auto p = head.find("float4"); p != std::string::npos) head.replace(p, 6, r.render_type(m.root()));
        std::string body;
        for (size_t i = 0; i < m.root().src().size(); i++) body += (i ? "," : "") + cx(m)[m.root().src(i)];
        return emit(m, head + r.float4_style.first + body + r.float4_style.second);
      },

      // load/store
      UPat(LOAD, {}, {UPat::var("bidx")}) >> [](M m) { return emit(m, "(" + rn(m).render_access(cx(m), m["bidx"]) + ")"); },
      UPat(LOAD, {}, {UPat::var("bidx"), UPat(CUSTOM)}) >> [](M m) { return emit(m, "(" + rn(m).render_access(cx(m), m["bidx"]) + ")"); },  // (add_prefetches)
      UPat(LOAD, {}, {UPat::var("bidx"), UPat::var("var"), UPat::var("gate")}) >> [](M m) {
        return emit(m, "(" + cx(m)[m["gate"]] + "?" + rn(m).render_access(cx(m), m["bidx"]) + ":" + cx(m)[m["var"]] + ")");
      },
      UPat(STORE, {}, {UPat::var("bidx"), UPat::var("var")}) >>
          [](M m) { return emit(m, rn(m).render_access(cx(m), m["bidx"]) + " = " + cx(m)[m["var"]] + ";"); },

      // alu
      // a SIMD kernel's lane masks (clang's vector compares: -1 or 0 per lane) negate as x == 0, not x != 1
      UPat(CMPNE, dtypes::bool_, {UPat::var("x", dtypes::bool_), UPat::var("t")}) >> [](M m) -> UOp {
        const UOp& t = m["t"].op() == CAST ? m["t"].src(0) : m["t"];  // (literals reach the renderer cast)
        if (lin_max_numel(m["x"]) == 1 || t.op() != CONST || !t.val().truthy()) return {};
        return emit(m, "(" + cx(m)[m["x"]] + "==0)");
      },

      UPat(GroupOp::ALU, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        const UOp& x = m.root();
        const CStyleLanguage& r = rn(m);
        auto it = r.code_for_op.find(x.op());
        if (it == r.code_for_op.end()) return {};
        bool assoc = OpSet{ADD, MUL, XOR, OR, AND}.has(x.op());
        std::vector<std::string> args;
        args.reserve(x.src().size());
        for (auto& v : x.src()) args.push_back(assoc && v.op() == x.op() ? strip_parens(cx(m)[v]) : cx(m)[v]);
        return emit(m, it->second(args, x.dtype()));
      },

      // call an external function
      UPat(CALL, {}, {UPat()}, {}, "x", true) >> [](M m) {
        const UOp& x = m.root();
        const CStyleLanguage& r = rn(m);
        std::string types, args;
        for (size_t i = 1; i < x.src().size(); i++) {
          types += (i > 1 ? ", " : "") + r.render_type(x.src(i));
          args += (i > 1 ? ", " : "") + std::string("(") + r.render_type(x.src(i)) + ")(" + cx(m)[x.src(i)] + ")";
        }
        return emit(m, "(((" + r.abi + r.render_dtype(x.dtype(), 1, AddrSpace::REG) + "(*)(" + types + "))(" + cx(m)[x.src(0)] + "))(" + args +
                           "))" + (x.dtype() == dtypes::void_ ? ";" : ""));
      },

      // a tensor core op is a call of its prelude function (CUDARenderer::assemble)
      UPat(WMMA, {}, {}, {}, "x", true) >> [](M m) {
        const UOp& x = m.root();
        return emit(m, "__" + wmma_name(x) + "(" + cx(m)[x.src(0)] + ", " + cx(m)[x.src(1)] + ", " + cx(m)[x.src(2)] + ")");
      },

      // custom code passes through with its format string
      UPat(OpSet{CUSTOM, CUSTOMI}, {}, {}, {}, "x", true) >> [](M m) {
        std::vector<std::string> a;
        for (auto& s : m.root().src()) a.push_back(cx(m)[s]);
        return emit(m, pyformat(m.root().arg().s(), a));
      },
  };
}

// one allocation: inlined expressions nest, so their strings grow long
std::string cat(std::initializer_list<std::string_view> parts) {
  size_t n = 0;
  for (auto p : parts) n += p.size();
  std::string r;
  r.reserve(n);
  for (auto p : parts) r.append(p);
  return r;
}
std::string bin(const char* op, const std::vector<std::string>& a) { return cat({"(", a[0], op, a[1], ")"}); }
}  // namespace

// ***** 3. CStyleLanguage *****

CStyleLanguage::CStyleLanguage() : string_rewrite(base_rewrite()) {
  auto B = [](const char* op) -> OpFn { return [op](const std::vector<std::string>& a, DType) { return bin(op, a); }; };
  auto U = [](std::string pre, std::string post) -> OpFn {
    return [pre, post](const std::vector<std::string>& a, DType) { return cat({pre, a[0], post}); };
  };
  code_for_op = {
      {SQRT, U("sqrt(", ")")}, {RECIPROCAL, U("(1/", ")")}, {NEG, U("-", "")}, {EXP2, U("exp2(", ")")}, {LOG2, U("log2(", ")")},
      {SIN, U("sin(", ")")},   {TRUNC, U("trunc(", ")")},   {AND, B("&")},     {XOR, B("^")},            {OR, B("|")},
      {ADD, B("+")},           {SUB, B("-")},               {MUL, B("*")},     {CMOD, B("%")},           {CDIV, B("/")},
      {CMPNE, B("!=")},        {SHR, B(">>")},              {SHL, B("<<")},    {CMPLT, B("<")},          {CMPEQ, B("==")},
      {WHERE, [](const std::vector<std::string>& a, DType) { return cat({"(", a[0], "?", a[1], ":", a[2], ")"}); }},
  };
}

std::string CStyleLanguage::render_dtype(DType dt, int64_t sz, AddrSpace addrspace, bool override_ptr) const {
  std::string prefix, suffix;
  if (addrspace == AddrSpace::LOCAL && smem_prefix_for_cast) prefix = smem_prefix;
  if (addrspace == AddrSpace::GLOBAL) prefix = buffer_prefix;
  if (addrspace == AddrSpace::LOCAL || addrspace == AddrSpace::GLOBAL || override_ptr) suffix = "*";
  auto it = type_map.find(dt.id);
  std::string base = it != type_map.end() ? it->second : std::string(dt.c_name());
  if (sz > 1) {
    std::replace(base.begin(), base.end(), ' ', '_');
    return prefix + base + std::to_string(sz) + suffix;
  }
  return prefix + base + suffix;
}

std::string CStyleLanguage::render_type(const UOp& u) const {
  return render_dtype(u.dtype(), lin_max_numel(u), u.addrspace().value_or(AddrSpace::ALU));
}

std::string CStyleLanguage::render_access(const RenderCtx& ctx, const UOp& u) const {
  int64_t n = lin_max_numel(u);
  if (n > 1 || u.dtype() != u.src(0).dtype())
    return "*((" + render_dtype(u.dtype(), n, u.addrspace().value_or(AddrSpace::ALU), true) + ")(" + ctx[u] + "))";
  return "*" + ctx[u];
}

bool CStyleLanguage::simd_vectors() const { return vector_width > 0 && simd_kernels(); }
int64_t CStyleLanguage::simd_width() const {
  if (!simd_vectors()) return 0;
  int64_t w = settings().CPU_VECTOR_WIDTH;
  if (w != 0 && w != 8 && w != 16) throw Error("CPU_VECTOR_WIDTH must be 8 (AVX2), 16 (AVX-512) or 0 (the host's), got " + std::to_string(w));
  return w ? w : vector_width;
}

std::string CStyleLanguage::identity() const {
  std::vector<std::pair<int, std::string>> types;
  for (auto& [id, name] : type_map) types.emplace_back(int(id), name);
  std::sort(types.begin(), types.end());
  std::string s = Renderer::identity();
  for (auto& [id, name] : types) s += "|" + std::to_string(id) + "=" + name;
  return s;
}

std::string CStyleLanguage::render_index(const RenderCtx& ctx, const UOp& buf, const UOp& idx) const {
  if (buf.addrspace() == AddrSpace::ALU) {  // a lane of a vector value
    if (!(idx.op() == CAST && idx.src(0).op() == CONST)) return "(" + ctx[buf] + ")[" + ctx[idx] + "]";
    int64_t lane = idx.src(0).val().i;
    if (lin_max_numel(buf) > gep_arr_threshold) return ctx[buf] + "[" + std::to_string(lane) + "]";
    return ctx[buf] + "." + std::string(1, "xyzwabcd"[lane]);
  }
  // NOTE: tinygrad compares the index's arg with Ops.ADD here, which never holds: the index keeps its parentheses.
  // Ours drops them for a constant offset (SIMD kernels): the offset then folds into the load's address instead of an
  // int add and sign extension per load, 15% of a convolution's inner loop.
  auto is_const = [](const UOp& c) { return c.op() == CONST || (c.op() == CAST && c.src(0).op() == CONST); };
  if (ctx.simd && idx.op() == ADD && is_const(idx.src(1)))
    return "(" + ctx[buf] + "+" + ctx[idx.src(0)] + "+" + ctx[idx.src(1)] + ")";
  return "(" + ctx[buf] + "+" + ctx[idx] + ")";
}

std::string CStyleLanguage::render_buffer(const RenderCtx& ctx, const UOp& x) const {
  std::string prefix = x.addrspace() == AddrSpace::LOCAL ? smem_align + smem_prefix : "";
  bool vector_reg = x.addrspace() == AddrSpace::REG && x.dtype() == dtypes::float32 && lin_max_numel(x) >= 4 && ctx.simd;
  return prefix + render_dtype(x.dtype(), 1) + " " + ctx[x] + "[" + std::to_string(lin_max_numel(x)) + "]" + (vector_reg ? " __attribute__((aligned(" + std::to_string(simd_width() * 4) + ")))" : "") + ";";
}

CStyleLanguage::Parts CStyleLanguage::render_parts(const std::vector<UOp>& uops, const std::string& name_override) const {
  std::vector<UOp> temps;  // the CAST spellings of CONSTs, alive until the end

  NodeMap<std::string> r(2 * uops.size());
  RenderCtx ctx{this, &r, {}, simd_vectors()};
  NodeMap<int> child_count(2 * uops.size());
  for (auto& u : uops) for (auto& s : u.src()) child_count[s]++;

  // PARAMs reachable from the targets of STOREs (not looking through END) are written
  std::set<const UOpNode*> writable;
  {
    std::vector<UOp> stack;
    std::set<const UOpNode*> seen;
    for (auto& u : uops) if (u.op() == STORE) stack.push_back(u.src(0));
    while (!stack.empty()) {
      UOp x = stack.back();
      stack.pop_back();
      if (!seen.insert(x.get()).second) continue;
      if (x.op() == PARAM) writable.insert(x.get());
      if (x.op() == END) continue;
      for (auto& s : x.src()) stack.push_back(s);
    }
  }

  Parts p;
  p.name = "test";
  static constexpr const char* prefixes[] = {"wmma", "buf", "cast", "bidx", "val", "alu"};
  int named[std::size(prefixes)] = {};  // how many nodes got each prefix
  int depth = 1;
  for (const UOp& u : uops) {
    Ops op = u.op();
    if (op == CONST) {
      // tinygrad spells every literal CAST(dtype, CONST) before rendering and never names a CONST; a CONST with a
      // concrete dtype (not in that form) is spelled as that cast would be, a weak one stays unnamed
      if (!u.dtype().is_weak() && !u.val().is_invalid()) {
        UOp as_cast = UOp::make(CAST, u.dtype(), {UOp::const_(u.val())}, Arg(u.dtype()));
        temps.push_back(as_cast);
        ctx.out.clear();
        if (string_rewrite.rewrite(as_cast, &ctx)) r[u] = std::move(ctx.out);
      }
      continue;
    }
    if (op == NOOP || op == GROUP) continue;
    if (op == STACK && u.src().empty()) continue;
    if (op == AFTER) { std::string s = ctx[u.src(0)]; r[u] = std::move(s); continue; }  // r[u] may move ctx's strings
    if (op == SINK) {
      if (u.arg().is<std::string>()) p.name = u.arg().s();
      continue;
    }
    if (op == PARAM) {
      std::string nm = "data" + std::to_string(u.arg().param().slot) + "_";
      const auto& shp = lin_max_shape(u);
      for (size_t i = 0; shp && i < shp->size(); i++) nm += (i ? "_" : "") + std::to_string((*shp)[i]);
      r[u] = nm;
      p.bufs.push_back({nm, {u, writable.count(u.get()) > 0}});
      continue;
    }

    // naming
    int prefix = -1;
    if (op == SPECIAL) r[u] = u.arg().s();
    else if (op == RANGE) {
      const auto& a = u.arg().ints();
      std::string rs;
      for (size_t i = 0; i + 1 < a.size(); i++) rs += (i ? "_" : "") + (a[i] >= 0 ? std::to_string(a[i]) : "m" + std::to_string(-a[i]));
      r[u] = std::string(1, axis_letter(AxisType(a.back()))) + "idx" + rs;
    } else {
      switch (op) {
        case WMMA: prefix = 0; break;
        case BUFFER: prefix = 1; break;
        case CAST: case BITCAST: case STACK: prefix = 2; break;
        case INDEX: prefix = 3; break;
        case LOAD: prefix = 4; break;
        default: prefix = 5;
      }
      r[u] = prefixes[prefix] + std::to_string(named[prefix]);
    }

    ctx.out.clear();
    if (!string_rewrite.rewrite(u, &ctx)) {
      std::string srcs;
      for (auto& s : u.src()) srcs += (srcs.empty() ? "" : ", ") + std::string(op_name(s.op())) + ":" + std::string(s.dtype().name());
      throw Error("renderer: failed to render " + std::string(op_name(op)) + " (" + std::string(u.dtype().name()) + ") with sources [" +
                  srcs + "] arg " + u.arg().str());
    }
    std::string l = std::move(ctx.out);

    if (op == ENDIF || op == END) depth--;
    auto as = u.addrspace();
    bool inline_it = (op != CAST || lin_max_numel(u) == 1) &&
                     ((op == CAST && u.src(0).op() == CONST) || op == INDEX || op == SHRINK || op == CUSTOMI ||
                      (op == LOAD && u.src(0).addrspace() == AddrSpace::REG && child_count[u] == 1) ||
                      ((op == CAST || op == BITCAST) && (as == AddrSpace::GLOBAL || as == AddrSpace::LOCAL)) ||
                      ((op == STACK || (GroupOp::ALU.has(op) && op != WHERE) || op == CAST || op == BITCAST) && child_count[u] == 1));
    if (inline_it) {
      r[u] = std::move(l);
    } else {
      if (op != RANGE && op != STORE && op != BUFFER && u.dtype() != dtypes::void_)
        l = render_type(u) + " " + r[u] + " = " + l + (op != SPECIAL ? ";" : "");
      std::string ind(size_t(2 * depth), ' '), line;
      size_t st = 0;
      while (true) {
        size_t nl = l.find('\n', st);
        line += (st ? "\n" : "") + ind + l.substr(st, nl == std::string::npos ? std::string::npos : nl - st);
        if (nl == std::string::npos) break;
        st = nl + 1;
      }
      p.kernel.push_back(std::move(line));
      if (prefix >= 0) named[prefix]++;
    }
    if (op == IF || op == RANGE) depth++;
  }
  if (!name_override.empty()) p.name = name_override;
  return p;
}

std::string CStyleLanguage::render_body(const Parts& p, const std::vector<UOp>& uops, const std::vector<std::string>* prefix) const {
  std::string sig;
  for (auto& [nm, bm] : p.bufs) {
    const UOp& u = bm.first;
    const ParamArg& pa = u.arg().param();
    bool alu = pa.addrspace == AddrSpace::ALU;
    std::string t = (pa.is_volatile ? "volatile " : "") + (alu ? var_prefix : "") +
                    render_dtype(u.dtype(), 1, pa.addrspace.value_or(AddrSpace::ALU)) + (alu ? var_suffix : buffer_suffix);
    sig += (sig.empty() ? "" : ", ") + t + " " + nm;
  }
  std::string body;
  for (size_t i = 0; i < p.kernel.size(); i++) body += (i ? "\n" : "") + p.kernel[i];
  std::string kt = kernel_typedef;
  // tinygrad formats {launch_bounds} with the product of the local dims' sizes (threads per block)
  if (size_t at = kt.find("{launch_bounds}"); at != std::string::npos) {
    int64_t threads = 1;
    for (auto& u : uops)
      if (u.op() == SPECIAL && u.arg().s().front() == 'l') threads *= u.src(0).vmax().i;
    kt.replace(at, 15, std::to_string(threads));
  }
  std::string prg = kt + " " + p.name + "(" + sig + ") {\n" + body + "\n}";
  if (!prefix) return prg;
  std::string pre;
  for (size_t i = 0; i < prefix->size(); i++) pre += (i ? "\n" : "") + (*prefix)[i];
  return pre + "\n" + prg;
}

std::string CStyleLanguage::assemble(const Parts& p, const std::vector<UOp>& uops) const { return render_body(p, uops); }

std::string CStyleLanguage::render(const std::vector<UOp>& uops, const std::string& name) const {
  return assemble(render_parts(uops, name), uops);
}

std::vector<KernelParam> CStyleLanguage::params_of(const Parts& p) const {
  std::vector<KernelParam> out;
  for (auto& [nm, bm] : p.bufs) {
    const UOp& u = bm.first;
    const ParamArg& pa = u.arg().param();
    KernelParam k;
    k.name = nm, k.slot = pa.slot, k.dtype = u.dtype(), k.addrspace = pa.addrspace.value_or(AddrSpace::GLOBAL);
    k.writable = bm.second, k.is_volatile = pa.is_volatile, k.var_name = pa.name, k.numel = lin_max_numel(u);
    bool alu = k.addrspace == AddrSpace::ALU;
    k.c_type = (pa.is_volatile ? "volatile " : "") + (alu ? var_prefix : "") + render_dtype(u.dtype(), 1, k.addrspace) +
               (alu ? var_suffix : buffer_suffix);
    out.push_back(std::move(k));
  }
  return out;
}

RenderedKernel CStyleLanguage::render_kernel(const std::vector<UOp>& uops, const std::string& name, EntryStyle entry) const {
  Parts p = render_parts(uops, name);
  RenderedKernel k;
  k.name = p.name;
  k.params = params_of(p);
  k.src = assemble(p, uops);
  std::string e = render_entry(p.name, k.params, entry, *this);
  k.entry_name = entry == EntryStyle::None ? p.name : p.name + "_entry";
  if (!e.empty()) k.src += e;
  return k;
}

// ***** 4. ClangRenderer *****

ClangRenderer::ClangRenderer() {
  device = "CPU";
  has_threads = true;
  global_max = {std::max<int64_t>(1, std::thread::hardware_concurrency()), 0, 0};
  float4_fmt = "(float4)";
  float4_style = {"{", "}"};
  gep_arr_threshold = 0;
  vector_width = __builtin_cpu_supports("avx512f") ? 16 : 8;  // the host's: kernels are compiled with -march=native
  pmaddwd_lanes = __builtin_cpu_supports("avx512bw") ? 16 : __builtin_cpu_supports("avx2") ? 8 : 0;
  vpdpbusd_lanes = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") ? 16 : __builtin_cpu_supports("avxvnni") ? 8 : 0;
  infinity = "__builtin_inff()";
  nan = "__builtin_nanf(\"\")";
  barrier = "__atomic_thread_fence(__ATOMIC_SEQ_CST);";
  buffer_suffix = " restrict";
  type_map = {{DTypeId::bool_, "_Bool"}, {DTypeId::float16, "__fp16"}};
  for (DTypeId d : {DTypeId::fp8e4m3, DTypeId::fp8e5m2, DTypeId::fp8e4m3fnuz, DTypeId::fp8e5m2fnuz}) type_map[d] = "unsigned char";
  extra_matcher = &clang_extra_matcher();
  // math goes to builtins; EXP2/LOG2/SIN/RECIPROCAL are decomposed before rendering (as MAX and the floor ops are)
  for (Ops o : {EXP2, SIN, LOG2, TRUNC, RECIPROCAL}) code_for_op.erase(o);
  code_for_op[SQRT] = [](const std::vector<std::string>& a, DType dt) {
    return (dt == dtypes::float64 ? "__builtin_sqrt(" : "__builtin_sqrtf(") + a[0] + ")";
  };
  code_for_op[TRUNC] = [](const std::vector<std::string>& a, DType dt) {
    return (dt == dtypes::float64 ? "__builtin_trunc(" : "__builtin_truncf(") + a[0] + ")";
  };
  code_for_op[FDIV] = [](const std::vector<std::string>& a, DType) { return bin("/", a); };
}

std::string ClangRenderer::render_vector_prefix(DType dt, int64_t count) const {
  // aligned to the size rounded down to a power of two (clang's own default); bool vectors are byte aligned. SIMD
  // kernels' vectors are element aligned: their 8-wide loads may start at any 16 bytes of a view (unaligned vector
  // loads cost nothing extra on aligned data)
  int64_t bytes = int64_t(dt.itemsize()) * count, align = 1;
  if (!dt.is_bool()) while (align * 2 <= bytes) align *= 2;
  if (simd_vectors()) align = dt.itemsize();
  // (clang has no bool vectors: a SIMD kernel's only ones are the lane masks of float32 compares, int32 lanes)
  if (dt.is_bool() && simd_vectors())
    return "typedef int " + render_dtype(dt, count, AddrSpace::REG) + " __attribute__((aligned(4),ext_vector_type(" + std::to_string(count) + ")));";
  return "typedef " + render_dtype(dt, 1, AddrSpace::REG) + " " + render_dtype(dt, count, AddrSpace::REG) + " __attribute__((aligned(" +
         std::to_string(align) + "),ext_vector_type(" + std::to_string(count) + ")));";
}

namespace {
// the vector types a clang kernel uses (dtype, lanes), once each in first-use order
std::vector<std::pair<DType, int64_t>> vector_types(const std::vector<UOp>& uops) {
  std::vector<std::pair<DType, int64_t>> seen;
  for (auto& u : uops) {
    auto as = u.addrspace();
    if (as && *as != AddrSpace::ALU) continue;
    if (u.dtype() == dtypes::void_ || !lin_max_shape(u)) continue;
    std::pair<DType, int64_t> k{u.dtype(), lin_max_numel(u)};
    if (k.second > 1 && std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
  }
  return seen;
}
}  // namespace

std::vector<std::string> ClangRenderer::render_defines(const std::vector<UOp>& uops) const {
  std::vector<std::string> out;
  // fp8 vectors are spelled as uint8's (both are bytes): one typedef for the name
  for (auto& [dt, n] : vector_types(uops))
    if (std::string d = render_vector_prefix(dt, n); std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

std::string ClangRenderer::assemble(const Parts& p, const std::vector<UOp>& uops) const {
  std::vector<std::string> defs = render_defines(uops);
  std::string d;
  for (size_t i = 0; i < defs.size(); i++) d += (i ? "\n" : "") + defs[i];
  // tinygrad's clang entry hook (_render_entry) is empty; render_kernel adds one when a runtime asks for it
  std::string body = render_body(p, uops);
  // clang splits vectors wider than 256 bits in two on the Xeons it tunes for (prefer-vector-width=256) unless the
  // function asks for them: zmm accumulators, not twice as many ymm ones, spilled
  int64_t widest = 0;
  for (auto& [dt, n] : vector_types(uops)) widest = std::max<int64_t>(widest, int64_t(dt.itemsize()) * n);
  if (widest > 32 && simd_width() && body.starts_with(kernel_typedef + " "))
    body.insert(kernel_typedef.size(), " __attribute__((min_vector_width(" + std::to_string(widest * 8) + ")))");
  return d + "\n" + body + "\n";
}

// ClangRenderer.extra_matcher: float casts through float32, bfloat16 in software

namespace {
UOp cast_float_to_bf16(const UOp& x) {
  UOp u = x.bitcast(dtypes::uint32);
  u = ((-u & 0x7f800000u).ne(lit(0))).where(u + ((u >> 16) & 1) + 0x7fff, ((u & 0xffff).ne(lit(0))).where(u | 0x10000, u));
  return (u >> 16).cast(dtypes::uint16).bitcast(dtypes::bfloat16);
}
}  // namespace

namespace {
UOp u32(int64_t v) { return UOp::const_(v, dtypes::uint32); }

// float32 -> float16 in integer ops: round to nearest even, subnormals, overflow to inf, NaN stays NaN
UOp cast_float_to_f16(const UOp& x) {
  UOp u = x.bitcast(dtypes::uint32), a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
  // below 2**-14 the result counts steps of 2**-24: scaled up, the float addition of 2**23 rounds it to even
  UOp small = ((a.bitcast(dtypes::float32) * 16777216.0) + 8388608.0).bitcast(dtypes::uint32) - 0x4b000000u;
  UOp normal = (a - 0x38000000u) >> 13, rem = a & 0x1fffu;
  normal = normal + ((rem > 0x1000u) | (rem.eq(u32(0x1000)) & (normal & 1u).ne(u32(0)))).cast(dtypes::uint32);
  UOp h = (a > 0x7f800000u).where(u32(0x7e00), (a >= 0x477ff000u).where(u32(0x7c00), (a < 0x38800000u).where(small, normal)));
  return (h | sign).cast(dtypes::uint16).bitcast(dtypes::float16);
}
// float16 -> float32 exactly (subnormals through a float multiply, which is exact for them)
UOp cast_f16_to_float(const UOp& x) {
  UOp h = x.bitcast(dtypes::uint16).cast(dtypes::uint32), e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  UOp sub = (m.cast(dtypes::float32) * 5.9604644775390625e-08).bitcast(dtypes::uint32);
  UOp bits = e.eq(u32(0)).where(sub, e.eq(u32(31)).where(u32(0x7f800000) | (m << 13), ((e + 112u) << 23) | (m << 13)));
  return (bits | ((h & 0x8000u) << 16)).bitcast(dtypes::float32);
}

// the fp8 formats' parameters: mantissa bits, exponent bias, the largest finite code
struct Fp8Bits { int64_t mbits, bias, max_code; };
Fp8Bits fp8_bits(DType d) {
  int64_t mbits = d == dtypes::fp8e4m3 || d == dtypes::fp8e4m3fnuz ? 3 : 2;
  int64_t bias = (mbits == 3 ? 7 : 15) + d.is_fnuz();
  return {mbits, bias, d == dtypes::fp8e4m3 ? 0x7e : d == dtypes::fp8e5m2 ? 0x7b : 0x7f};
}
// fp8 -> float32 exactly: normals move their exponent and mantissa, subnormals go through a float multiply (exact for
// them); e4m3's S.1111.111 and fnuz's 0x80 are NaN, e5m2's top exponent is inf or NaN as in IEEE 754
UOp cast_fp8_to_float(const UOp& x, DType d) {
  auto [mbits, bias, max_code] = fp8_bits(d);
  UOp b = x.bitcast(dtypes::uint8).cast(dtypes::uint32), mag = b & 0x7fu, e = mag >> mbits, m = mag & ((1 << mbits) - 1);
  UOp sub = (m.cast(dtypes::float32) * std::ldexp(1.0, int(1 - bias - mbits))).bitcast(dtypes::uint32);
  UOp bits = e.eq(u32(0)).where(sub, ((e + (127 - bias)) << 23) | (m << (23 - mbits)));
  if (d == dtypes::fp8e4m3) bits = mag.eq(u32(0x7f)).where(u32(0x7fc00000), bits);
  if (d == dtypes::fp8e5m2) bits = e.eq(u32(31)).where(u32(0x7f800000) | (m << 21), bits);
  if (d.is_fnuz()) bits = b.eq(u32(0x80)).where(u32(0x7fc00000), bits);
  return (bits | ((b & 0x80u) << 24)).bitcast(dtypes::float32);
}
// float32 -> fp8, round to nearest even; finite overflow and inf saturate to the largest finite value (CUDA's
// __NV_SATFINITE); NaN is 0x7f with the sign (0x80 in fnuz, which also has no -0)
UOp cast_float_to_fp8(const UOp& x, DType d) {
  auto [mbits, bias, max_code] = fp8_bits(d);
  int64_t max_bits = ((max_code >> mbits) + 127 - bias) << 23 | (max_code & ((1 << mbits) - 1)) << (23 - mbits);
  UOp u = x.bitcast(dtypes::uint32), a = u & 0x7fffffffu, sign = (u >> 24) & 0x80u;
  UOp ac = (a > u32(max_bits)).where(u32(max_bits), a);
  // below the smallest normal the result counts subnormal steps: scaled up, the float addition of 2**23 rounds it to even
  UOp small = ((ac.bitcast(dtypes::float32) * std::ldexp(1.0, int(bias - 1 + mbits))) + 8388608.0).bitcast(dtypes::uint32) - 0x4b000000u;
  UOp normal = (ac - u32((127 - bias) << 23)) >> (23 - mbits), rem = ac & ((1 << (23 - mbits)) - 1), half = u32(1 << (22 - mbits));
  normal = normal + ((rem > half) | (rem.eq(half) & (normal & 1u).ne(u32(0)))).cast(dtypes::uint32);
  UOp code = (ac < u32((128 - bias) << 23)).where(small, normal);
  UOp nan = a > u32(0x7f800000);
  UOp res = d.is_fnuz() ? (nan | code.eq(u32(0))).where(nan.where(u32(0x80), u32(0)), code | sign) : nan.where(u32(0x7f), code) | sign;
  return res.cast(dtypes::uint8).bitcast(d);
}

// math on the dtypes `soft` through float32 (tinygrad's create_non_native_float_pats); the casts between float32 and
// the dtypes `manual` as bit operations (bfloat16's as tinygrad's pm_manual_bf16_cast, float16's and fp8's ours)
PatternMatcher floats_in_software(DTypeSet soft, DTypeSet manual) {
  using enum Ops;
  using namespace pat;
  DTypeSet bf = soft;
  PatternMatcher non_native{
      U(WHERE, bf, {V("b"), V("x"), V("y")}, {}, "w") >> [](M m) {
        return m["b"].where(m["x"].cast(dtypes::float32), m["y"].cast(dtypes::float32)).cast(m["w"].dtype());
      },
      U(GroupOp::ALU - OpSet{WHERE}, bf, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        std::vector<UOp> s;
        for (auto& v : x.src()) s.push_back(v.cast(dtypes::float32));
        return UOp::make(x.op(), s, x.arg()).cast(x.dtype());
      },
      U(GroupOp::ALU, dtypes::bool_, {V("x", bf), V("y", bf)}, {}, "alu") >> [](M m) {
        return UOp::make(m["alu"].op(), {m["x"].cast(dtypes::float32), m["y"].cast(dtypes::float32)}, m["alu"].arg());
      },
      U(CAST, bf, {V("x")}, {}, "y") >> [](M m) {
        return m["x"].dtype() != dtypes::float32 ? m["x"].cast(dtypes::float32).cast(m["y"].dtype()) : UOp();
      },
      U(CAST, {}, {V("y", bf)}, {}, "x") >> [](M m) {
        return m["x"].dtype() != dtypes::float32 ? m["y"].cast(dtypes::float32).cast(m["x"].dtype()) : UOp();
      },
  };
  DTypeSet b16(dtypes::bfloat16), f16(dtypes::float16), fp8;
  fp8.bits = manual.bits & dtypes::fp8s().bits;
  PatternMatcher manual_casts;
  if (manual.has(dtypes::bfloat16))
    manual_casts = manual_casts + PatternMatcher{
                                      U(CAST, dtypes::float32, {V("x", b16)}) >> [](M m) {
                                        return (m["x"].bitcast(dtypes::uint16).cast(dtypes::uint32) << 16).bitcast(dtypes::float32);
                                      },
                                      U(CAST, b16, {V("x", dtypes::float32)}) >> [](M m) { return cast_float_to_bf16(m["x"]); },
                                  };
  if (manual.has(dtypes::float16))
    manual_casts = manual_casts + PatternMatcher{
                                      U(CAST, dtypes::float32, {V("x", f16)}) >> [](M m) { return cast_f16_to_float(m["x"]); },
                                      U(CAST, f16, {V("x", dtypes::float32)}) >> [](M m) { return cast_float_to_f16(m["x"]); },
                                  };
  if (fp8.bits)
    manual_casts = manual_casts + PatternMatcher{
                                      U(CAST, dtypes::float32, {V("x", fp8)}) >> [](M m) { return cast_fp8_to_float(m["x"], m["x"].dtype()); },
                                      U(CAST, fp8, {V("x", dtypes::float32)}, {}, "y") >> [](M m) { return cast_float_to_fp8(m["x"], m["y"].dtype()); },
                                  };
  return non_native + manual_casts;
}
}  // namespace

const PatternMatcher& clang_extra_matcher() {
  static const PatternMatcher pm = [] {
    using namespace pat;
    PatternMatcher casts{
        V("x", dtypes::float64).cast(DTypeSet(dtypes::float16)) >> [](M m) { return m["x"].cast(dtypes::float32).cast(dtypes::float16); },
        V("x", dtypes::float64).cast(DTypeSet(dtypes::bfloat16)) >> [](M m) { return m["x"].cast(dtypes::float32).cast(dtypes::bfloat16); },
        V("x", dtypes::bfloat16).cast(DTypeSet(dtypes::float16)) >> [](M m) { return m["x"].cast(dtypes::float32).cast(dtypes::float16); },
    };
    DTypeSet soft = dtypes::fp8s() | dtypes::bfloat16;
    return (casts + floats_in_software(soft, soft)).pure();
  }();
  return pm;
}

// CUDA has fp8e4m3/fp8e5m2 types (cuda_fp8.h) but no fp8 arithmetic; the fnuz formats are bytes with their casts in
// software (tinygrad emulates them through its dtype decompositions)
const PatternMatcher& cuda_extra_matcher() {
  static const PatternMatcher pm = floats_in_software(dtypes::fp8s(), DTypeSet{dtypes::fp8e4m3fnuz, dtypes::fp8e5m2fnuz}).pure();
  return pm;
}

const PatternMatcher& opencl_extra_matcher(bool native_half) {
  static const DTypeSet soft = dtypes::fp8s() | dtypes::bfloat16;
  static const PatternMatcher native = floats_in_software(soft, soft).pure(), emulated = floats_in_software(soft | dtypes::float16, soft | dtypes::float16).pure();
  return native_half ? native : emulated;
}

// ***** 5. entry wrappers (the runtime's calling convention lives here, nowhere else) *****

std::string render_entry(const std::string& kernel, const std::vector<KernelParam>& params, EntryStyle style, const CStyleLanguage& ren) {
  if (style == EntryStyle::None) return "";
  std::string args;
  if (style == EntryStyle::Runtime) {
    size_t nb = 0, nv = 0;
    for (size_t i = 0; i < params.size(); i++) {
      const KernelParam& k = params[i];
      std::string a;
      if (k.is_buffer()) a = "(" + std::string(k.is_volatile ? "volatile " : "") + ren.render_dtype(k.dtype, 1, k.addrspace) + ")bufs[" + std::to_string(nb++) + "]";
      else if (k.var_name == "core_id") a = "core_id";
      else a = "(" + ren.render_dtype(k.dtype, 1, AddrSpace::REG) + ")vars[" + std::to_string(nv++) + "]";
      if (i) args += ", ";
      args += a;
    }
    return "void " + kernel + "_entry(void* const* bufs, const long long* vars, int core_id) { (void)bufs; (void)vars; (void)core_id; " +
           kernel + "(" + args + "); }\n";
  }
  for (size_t i = 0; i < params.size(); i++) {
    const KernelParam& k = params[i];
    std::string word = "args[" + std::to_string(i) + "]";
    std::string t = k.is_buffer() ? (k.is_volatile ? "volatile " : "") + ren.render_dtype(k.dtype, 1, k.addrspace)
                                  : ren.render_dtype(k.dtype, 1, AddrSpace::REG);
    // a buffer word is an address, a variable word holds the value (converted to the variable's type)
    args += (i ? ", " : "") + std::string("(") + t + ")" + word;
  }
  return "void " + kernel + "_entry(const unsigned long long* args) { " + kernel + "(" + args + "); }\n";
}

}  // namespace tg
