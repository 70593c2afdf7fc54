#pragma once
// UOp: the one IR of tinygrad.cpp. An immutable, hash-consed node {op, dtype, src, arg, tag}: building a node equal
// to a live one returns that node, so equality is pointer equality. Nodes are reference counted and freed (and
// removed from the hash-cons table) when the last handle goes. Graphs are built and rewritten on one thread at a time.
// An empty handle (UOp()) is "no node": test it with operator bool before reading fields.
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <algorithm>
#include <vector>

#include "tg/dtype.h"
#include "tg/error.h"
#include "util/error.h"
#include "uop/ops.h"

namespace tg {

class UOp;
struct UOpNode;

// the arg of a BUFFER or PARAM (and of a Variable, which is an ALU-addrspace BUFFER with a value range)
struct ParamArg {
  int64_t slot = 0;
  DType dtype;
  std::optional<std::pair<ConstVal, ConstVal>> vmin_vmax;
  std::optional<int64_t> multiple_of;
  std::optional<std::string> name;
  std::optional<AddrSpace> addrspace = AddrSpace::GLOBAL;
  std::optional<int64_t> axis;
  std::string device;
  bool is_volatile = false;
  bool operator==(const ParamArg& o) const;
  std::string str() const;
};

// an arg type of a later layer (kernel info, programs ...): hashed, compared and printed through these
struct ArgObject {
  virtual ~ArgObject() = default;
  virtual size_t hash() const = 0;
  virtual bool equals(const ArgObject& o) const = 0;
  virtual std::string str() const = 0;
};

// the arg of a UOp: nothing, a constant, an int, a tuple of ints, a string, a dtype, a ParamArg or an ArgObject
class Arg {
 public:
  using Ints = std::vector<int64_t>;
  using Variant = std::variant<std::monostate, ConstVal, int64_t, Ints, std::string, DType, std::shared_ptr<const ParamArg>,
                               std::shared_ptr<const ArgObject>>;
  Variant v;
  Arg() = default;
  Arg(ConstVal c) : v(c) {}
  Arg(int64_t i) : v(i) {}
  Arg(int i) : v(int64_t(i)) {}
  Arg(Ints is) : v(std::move(is)) {}
  Arg(std::initializer_list<int64_t> is) : v(Ints(is)) {}
  Arg(std::string s) : v(std::move(s)) {}
  Arg(const char* s) : v(std::string(s)) {}
  Arg(DType d) : v(d) {}
  Arg(ParamArg p) : v(std::make_shared<const ParamArg>(std::move(p))) {}
  Arg(std::shared_ptr<const ArgObject> o) : v(std::move(o)) {}
  bool none() const { return v.index() == 0; }
  template <class T> bool is() const { return std::holds_alternative<T>(v); }
  const ConstVal& cval() const;
  int64_t i() const;
  const Ints& ints() const;
  const std::string& s() const;
  DType dtype() const;
  const ParamArg& param() const;
  bool operator==(const Arg& o) const;  // identity (as hash-consing needs)
  bool matches(const Arg& o) const;     // Python equality, for patterns: const 1 matches True and 1.0
  size_t hash() const;
  std::string str() const;  // as tinygrad's repr
};
int arg_compare(const Arg& a, const Arg& b);  // -1/0/1, Python tuple ordering

using Shape = std::vector<int64_t>;
using SShape = std::vector<UOp>;  // a shape with symbolic dims: one weakint UOp per dim (a CONST where the dim is known)

// sources of a node: braced list, vector or span (constructors defined below, once UOp is complete)
struct Srcs {
  const UOp* ptr = nullptr;
  size_t n = 0;
  Srcs() = default;
  Srcs(std::initializer_list<UOp> l);
  Srcs(const std::vector<UOp>& v);
  Srcs(std::span<const UOp> s);
  const UOp* begin() const { return ptr; }
  const UOp* end() const;
  size_t size() const { return n; }
};

struct Replace {
  std::optional<Ops> op;
  std::optional<DType> dtype;
  std::optional<std::vector<UOp>> src;
  std::optional<Arg> arg;
  std::optional<Arg> tag;
};

class UOp {
 public:
  UOp() = default;
  explicit UOp(const UOpNode* n);
  UOp(const UOp& o);
  UOp(UOp&& o) noexcept : p(o.p) { o.p = nullptr; }
  UOp& operator=(const UOp& o);
  UOp& operator=(UOp&& o) noexcept;
  ~UOp();

  // ** construction (hash-consed) **
  static UOp make(Ops op, DType dtype, Srcs src = {}, const Arg& arg = {}, const Arg& tag = {});
  static UOp make(Ops op, Srcs src, const Arg& arg = {});  // dtype derived from op and sources as tinygrad does
  static UOp const_(ConstVal v, std::optional<DType> dtype = {});  // bare literal: weakint/weakfloat/bool
  static UOp invalid();
  static UOp variable(const std::string& name, int64_t min_val, int64_t max_val, DType dtype = dtypes::weakint);
  UOp bind(int64_t val) const;               // a Variable bound to val (in its range): AFTER(var, STORE(var, CONST))
  std::pair<UOp, int64_t> unbind() const;    // a bound Variable: (the Variable, its value)
  std::unordered_map<UOp, int64_t> unbind_all(UOp* unbound = nullptr) const;  // every bind below; *unbound: without them
  static UOp range(int64_t end, int64_t axis_id, AxisType type = AxisType::WEAK, DType dtype = dtypes::weakint);
  static UOp range(const UOp& end, int64_t axis_id, AxisType type = AxisType::WEAK, DType dtype = dtypes::weakint);
  static UOp special(int64_t end, const std::string& name, DType dtype = dtypes::weakint);
  static UOp sink(Srcs srcs);
  static UOp stack(Srcs srcs);
  static UOp group(Srcs srcs);
  UOp replace(const Replace& r) const;

  // ** fields **
  const UOpNode* get() const { return p; }
  explicit operator bool() const { return p != nullptr; }
  Ops op() const;
  DType dtype() const;
  std::span<const UOp> src() const;
  const UOp& src(size_t i) const;
  const Arg& arg() const;
  const Arg& tag() const;
  bool operator==(const UOp& o) const { return p == o.p; }
  bool operator!=(const UOp& o) const { return p != o.p; }
  size_t hash() const;

  // ** properties (cached on the node) **
  const ConstVal& val() const;  // a CONST's value
  bool is_invalid() const;
  const ConstVal& vmin() const;
  const ConstVal& vmax() const;
  const std::optional<Shape>& shape_opt() const;  // throws tg::Error where computing it fails (the failure is cached)
  const std::optional<Shape>* shape_if_valid() const;  // nullptr where shape_opt() would throw
  const Shape& shape() const;  // throws tg::Error where the op has no shape, or a symbolic one (naming its dims)
  // tinygrad's shape with sint dims: CONSTs, or expressions of (bound) Variables; throws as shape() would otherwise
  const SShape& sym_shape() const;
  bool has_sym_shape() const;  // some dim is symbolic (shape() throws, sym_shape() does not)
  std::vector<UOp> toposort() const;
  const std::vector<const UOpNode*>& topo_nodes() const;  // cached; the graph keeps these alive
  bool in_backward_slice_with_self(const UOp& x) const;
  bool op_in_backward_slice_with_self(OpSet ops) const;
  const std::array<uint8_t, 32>& key() const;  // stable content hash (sha256), usable as a disk-cache key
  std::string render(bool simplify = true) const;  // index-expression text as tinygrad renders it
  std::string str() const;  // a readable graph: one node per line, shared nodes named once

  // ** ALU and friends, with tinygrad's broadcasting of literals and dtype promotion **
  UOp alu(Ops op, Srcs rest = {}) const;
  UOp cast(DType dt) const;
  UOp bitcast(DType dt) const;
  UOp const_like(ConstVal v) const;
  UOp ufix(ConstVal v) const { return const_(v); }
  UOp neg() const;
  UOp logical_not() const;
  UOp bitwise_not() const;
  UOp ne(const UOp& x) const;
  UOp eq(const UOp& x) const;
  UOp maximum(const UOp& x) const;
  UOp minimum(const UOp& x) const;
  UOp where(const UOp& x, const UOp& y) const;
  UOp reciprocal() const { return alu(Ops::RECIPROCAL); }
  UOp sqrt() const { return alu(Ops::SQRT); }
  UOp exp2() const { return alu(Ops::EXP2); }
  UOp log2() const { return alu(Ops::LOG2); }
  UOp sin() const { return alu(Ops::SIN); }
  UOp trunc() const { return alu(Ops::TRUNC); }
  UOp pow(const UOp& x) const;
  UOp valid(const UOp& cond) const;  // cond.where(self, Invalid)
  UOp get_idx() const;
  UOp get_valid() const;
  UOp usum(Srcs rest) const;
  UOp uprod(Srcs rest) const;
  UOp index(Srcs idx) const;
  UOp load(Srcs rest = {}) const;
  UOp store(const UOp& v) const;
  UOp after(Srcs deps) const;
  UOp end(Srcs ranges) const;
  UOp binop(Ops op, const UOp& y, bool reverse = false) const;  // promote both sides, then build op

  // ** symbolic **
  std::vector<UOp> split_uop(Ops sep) const;
  std::pair<UOp, ConstVal> pop_const(Ops op = Ops::ADD) const;
  int64_t const_factor() const;
  UOp divides(int64_t v) const;  // self/v when exact, else an empty UOp
  UOp divide_exact(const UOp& v) const;
  static UOp gcd(Srcs uops);
  bool overflows(DType dt) const;
  UOp simplify() const;
  UOp substitute(const std::unordered_map<UOp, UOp>& dvars) const;

  // ** movement ops (src/uop/movement.cpp): tinygrad's UOp._mop and the MovementMixin front ends **
  // mop builds exactly the node _mop builds (shape args as weakint CONST / STACK sources); the front ends resolve -1 and
  // negative dims, return *this for no-ops and throw tg::Error naming the op and the shapes.
  UOp mop(Ops op, const std::vector<int64_t>& arg) const;  // RESHAPE, EXPAND, PERMUTE, FLIP (one 0/1 per axis)
  UOp mop_pairs(Ops op, const std::vector<std::pair<int64_t, int64_t>>& arg) const;  // PAD (begin, new size), SHRINK (begin, size)
  UOp reshape(const Shape& shape) const;  // one -1 is inferred
  UOp expand(const Shape& shape) const;   // broadcast; -1 keeps a dim
  UOp permute(const std::vector<int64_t>& order) const;
  UOp pad(const std::vector<std::pair<int64_t, int64_t>>& before_after) const;  // MovementMixin.pad: one (before, after) >= 0 per axis
  UOp shrink(const std::vector<std::pair<int64_t, int64_t>>& start_end) const;  // one (start, end) per axis
  UOp flip(const std::vector<int64_t>& axes) const;
  UOp shrink_to(const Shape& shape) const;  // keep the first shape[i] of each axis
  UOp pad_to(const Shape& shape) const;     // pad at the end of each axis up to shape[i]
  UOp squeeze(std::optional<int64_t> dim = std::nullopt) const;
  UOp unsqueeze(int64_t dim) const;
  UOp flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  UOp unflatten(int64_t dim, const Shape& sizes) const;
  UOp transpose(int64_t dim0 = 1, int64_t dim1 = 0) const;
  // the movement front ends with sint arguments (weakint UOps); all-constant arguments take the int path above
  UOp reshape_sym(const SShape& shape) const;
  UOp expand_sym(const SShape& shape) const;
  UOp shrink_sym(const std::vector<std::pair<UOp, UOp>>& start_end) const;
  UOp pad_sym(const std::vector<std::pair<UOp, UOp>>& before_after) const;
  Shape marg() const;  // RESHAPE/EXPAND: the shape arg; PERMUTE: the order; FLIP: 0/1 per axis
  std::vector<std::pair<int64_t, int64_t>> marg_pairs() const;  // PAD/SHRINK: (begin, size) per axis
  UOp base() const;  // through movement ops and DETACH

  // ** tensor-level UOp helpers (src/uop/tensor_uop.cpp) **
  // tinygrad's UOp buffer/device helpers (uop/ops.py) and the UOp side of the mixins; single devices only for now
  // (a multi-device node throws). Weak dtypes have no storage: new_buffer/param/copy_to_device/element_size refuse them.
  std::optional<std::string> device() const;  // where the value lives; nullopt for device-free (const) graphs
  bool is_virtual() const;                    // no device or a weak dtype: nothing can back it as-is
  std::optional<AddrSpace> addrspace() const;
  bool has_buffer_identity(bool after_ok = false) const;  // a (RESHAPE/MSELECT ->) BUFFER or PARAM chain
  UOp buf_uop() const;
  static UOp new_buffer(const std::string& device, int64_t size, DType dtype);  // slot from a global counter
  static int64_t next_unique_num();  // tinygrad's UOp.unique_num: the slot new_buffer takes next
  static UOp param(int64_t slot, DType dtype, std::optional<Shape> shape = std::nullopt, std::optional<std::string> device = std::nullopt,
                   AddrSpace addrspace = AddrSpace::GLOBAL);
  UOp param_like(int64_t slot) const;
  UOp gettuple(int64_t i) const;  // output i of a FUNCTION (or TUPLE)
  static UOp empty(const Shape& shape, DType dtype = dtypes::default_float, const std::string& device = "");  // "" = default
  // a buffer of each dim's largest value, shrunk to the symbolic shape (tinygrad's empty with sint dims)
  static UOp empty_sym(const SShape& shape, DType dtype, const std::string& device);
  UOp empty_like(std::optional<DType> dtype = std::nullopt, std::optional<std::string> device = std::nullopt) const;
  UOp contiguous() const;  // ElementwiseMixin.contiguous: no-op on weak, device-free or buffer-backed nodes
  UOp rop(Ops op, std::vector<int64_t> axes) const;  // _rop: REDUCE of the non-1 axes, permuted to the front
  UOp copy_to_device(const std::string& device) const;
  bool is_variable() const;   // a 0-d ALU BUFFER with a value range
  bool is_bound_var() const;  // AFTER(var, STORE(var, CONST))
  int64_t element_size() const;
  int64_t max_numel() const;  // shapes are concrete here, so prod(shape)
  UOp rtag(const Arg& tag = Arg(ConstVal(true))) const { return replace({.tag = tag}); }

  // ** scheduler-level helpers (src/uop/sched_uop.cpp) **
  // tinygrad's range bookkeeping (ranges, ended_ranges), gated toposort and the small builders rangeify uses
  std::vector<UOp> ranges() const;  // the open RANGEs this node sits in, in tinygrad's dict order (cached)
  std::vector<UOp> ended_ranges() const;   // the sources a STAGE/REDUCE/END/CALL closes (flattened through AFTER)
  // gate(x) false: x is kept out with its sources; enter_calls false: a CALL/FUNCTION's body (src[0]) is skipped
  std::vector<UOp> toposort(const std::function<bool(const UOp&)>& gate, bool enter_calls = true) const;
  std::vector<UOp> backward_slice() const;  // toposort without self
  // substitute with an extra bottom-up matcher tried first (tinygrad's substitute(extra_pm=...)); walk: one pass
  UOp substitute(const std::unordered_map<UOp, UOp>& dvars, const class PatternMatcher* extra_pm, bool walk = false) const;
  UOp f(Ops op, const Arg& arg = {}) const;            // UOp(op, dtype, (self,), arg)
  UOp bufferize(Srcs rngs, const Arg& opts) const;     // STAGE(self, *rngs)
  UOp reduce(Srcs rngs, Ops op) const;                 // REDUCE(self, *rngs) with arg (op, 0)
  UOp const_like_shaped(ConstVal v) const;             // tinygrad's const_like: the CONST expanded to this node's shape
  int64_t numel() const;
  UOp unsharded_base() const;
  // the buffer (untagged) and element offset when reading this value in order reads one contiguous range of it
  std::optional<std::pair<UOp, int64_t>> contiguous_view() const;
  std::optional<int64_t> contiguous_view_offset() const;

 private:
  const UOpNode* p = nullptr;
};

// -1/0/1: tinygrad's tuplize order (op, arg, dtype, *srcs), used to put commutative operands in canonical order. A memo
// (uop/nodemap.h) keeps the results for pairs with sources: sorting a graph's nodes compares deep chains of one op
// level by level again and again
class TuplizeMemo;
int tuplize_compare(const UOp& a, const UOp& b, TuplizeMemo* memo = nullptr);
size_t live_uops();  // nodes alive now (for leak tests)
// called with each BUFFER node as it is freed (the engine drops the runtime buffer it owned); must not build UOps
void set_buffer_release_hook(void (*hook)(const UOpNode*));
Shape as_shape(const UOp& u);  // a shape argument (CONST or STACK of CONSTs) as ints
Shape as_shape(const UOp& u, std::string& err);  // a symbolic one sets err (where still empty) instead of throwing
SShape as_sym_shape(const UOp& u);               // a shape argument (CONST, expression or STACK of them) as simplified dims
std::string sym_shape_str(const SShape& s);      // "(3, i)": Variables by name, binds dropped
std::optional<Shape> int_shape(const SShape& s);  // the ints where every dim is constant
std::string strip_parens(const std::string& s);  // "(a+b)" -> "a+b" when the outer parens enclose it all
template <class T> bool has(const std::vector<T>& v, const T& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// binary operators: UOp with UOp or with a C++ number (a weak literal)
template <class T> concept Scalar = std::is_arithmetic_v<T>;
template <Scalar T> UOp lit(T v) {
  if constexpr (std::is_same_v<T, bool>) return UOp::const_(ConstVal(v));
  else if constexpr (std::is_floating_point_v<T>) return UOp::const_(ConstVal(double(v)));
  else return UOp::const_(ConstVal(int64_t(v)));
}
#define TG_UOP_BINOP(sym, fn)                                                         \
  UOp fn(const UOp& a, const UOp& b);                                                 \
  inline UOp operator sym(const UOp& a, const UOp& b) { return fn(a, b); }            \
  template <Scalar T> UOp operator sym(const UOp& a, T b) { return fn(a, lit(b)); } \
  template <Scalar T> UOp operator sym(T a, const UOp& b) { return fn(lit(a), b); }
TG_UOP_BINOP(+, uop_add)
TG_UOP_BINOP(-, uop_sub)
TG_UOP_BINOP(*, uop_mul)
TG_UOP_BINOP(/, uop_floordiv)  // Python's // on ints (floor); true division on floats
TG_UOP_BINOP(%, uop_mod)       // Python's % (floor modulo)
TG_UOP_BINOP(<, uop_lt)
TG_UOP_BINOP(>, uop_gt)
TG_UOP_BINOP(<=, uop_le)
TG_UOP_BINOP(>=, uop_ge)
TG_UOP_BINOP(&, uop_and)
TG_UOP_BINOP(|, uop_or)
TG_UOP_BINOP(^, uop_xor)
TG_UOP_BINOP(<<, uop_shl)
TG_UOP_BINOP(>>, uop_shr)
#undef TG_UOP_BINOP
inline UOp operator-(const UOp& a) { return a.neg(); }
inline UOp operator~(const UOp& a) { return a.bitwise_not(); }

std::optional<DType> dtype_from_uop(Ops op, Srcs src, const Arg& arg);
// evaluate one ALU op on constants as tinygrad's exec_alu (ints wrap to the dtype's width)
ConstVal exec_alu(Ops op, DType dtype, std::span<const ConstVal> operands, bool truncate_output = true);
// the bits of v as a `from` value reinterpreted as `to` (same itemsize; float16/32/64 and ints)
ConstVal bitcast_const(ConstVal v, DType from, DType to);
// evaluate a graph of ALU ops given values for its variables/ranges (the interpreter tests check simplification with)
ConstVal eval_uop(const UOp& u, const std::unordered_map<UOp, ConstVal>& vals);

struct UOpNode {
  mutable uint32_t rc = 0;
  Ops op;
  DType dtype;
  uint32_t nsrc;
  size_t hash;
  Arg arg, tag;
  OpSet ops_below;  // the ops of this node and of every node below it
  mutable uint64_t fixed_for = 0;  // the pure matcher components (PatternMatcher::pure) known to leave it as it is
  uint64_t serial = 0;  // creation order: each src's is smaller (apply_map_to_tensors skips graphs older than its keys)
  // lazily computed properties
  mutable bool have_minmax = false;
  mutable uint8_t addrspace = 0;  // UOp::addrspace(), once computed: 1 none, else the AddrSpace + 1
  mutable ConstVal vmin, vmax;
  struct Cache {
    std::optional<std::optional<Shape>> shape;
    std::shared_ptr<const std::string> shape_error;  // set where computing the shape failed (shared by the nodes above)
    std::optional<std::optional<Shape>> max_shape;  // renderer/cstyle.cpp
    std::optional<std::vector<UOp>> sym_shape;      // sym_shape(); set early for symbolic nodes
    std::optional<std::vector<const UOpNode*>> topo;
    std::optional<std::array<uint8_t, 32>> key;
    std::optional<std::vector<UOp>> ranges;  // sched_uop.cpp
    std::optional<std::optional<std::string>> device;  // tensor_uop.cpp, where the fast path does not find it
  };
  struct CacheDeleter { void operator()(Cache* c) const; };
  mutable std::unique_ptr<Cache, CacheDeleter> cache;
  Cache& props() const;  // the cache, made on first use (from a free list: graphs churn nodes)
  const UOp* srcs() const { return reinterpret_cast<const UOp*>(this + 1); }
};
static_assert(sizeof(UOpNode) % alignof(UOp) == 0);

// the list's array lives until the end of the full expression that passed it, as long as a Srcs parameter does
#pragma GCC diagnostic push
#ifndef __clang__
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
inline Srcs::Srcs(std::initializer_list<UOp> l) : ptr(l.begin()), n(l.size()) {}
#pragma GCC diagnostic pop
inline Srcs::Srcs(const std::vector<UOp>& v) : ptr(v.data()), n(v.size()) {}
inline Srcs::Srcs(std::span<const UOp> s) : ptr(s.data()), n(s.size()) {}
inline const UOp* Srcs::end() const { return ptr + n; }
inline UOp::UOp(const UOpNode* n) : p(n) { if (p) p->rc++; }
inline UOp::UOp(const UOp& o) : p(o.p) { if (p) p->rc++; }
void release_uop(const UOpNode* n);
inline UOp::~UOp() { if (p && --p->rc == 0) release_uop(p); }
inline UOp& UOp::operator=(const UOp& o) { UOp t(o); std::swap(p, t.p); return *this; }
inline UOp& UOp::operator=(UOp&& o) noexcept { std::swap(p, o.p); return *this; }
inline Ops UOp::op() const { return p->op; }
inline DType UOp::dtype() const { return p->dtype; }
inline std::span<const UOp> UOp::src() const { return {p->srcs(), p->nsrc}; }
[[noreturn, gnu::cold, gnu::noinline]] void src_out_of_range(size_t i, uint32_t nsrc);
inline const UOp& UOp::src(size_t i) const {
  if (i >= p->nsrc) [[unlikely]] src_out_of_range(i, p->nsrc);
  return p->srcs()[i];
}
inline const Arg& UOp::arg() const { return p->arg; }
inline const Arg& UOp::tag() const { return p->tag; }
inline size_t UOp::hash() const { return std::hash<const void*>()(p); }

}  // namespace tg

template <> struct std::hash<tg::UOp> {
  size_t operator()(const tg::UOp& u) const noexcept { return size_t(u.get()) * 0x9E3779B97F4A7C15ull >> 4; }
};
