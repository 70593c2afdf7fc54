// UOp nodes: args, the hash-cons table, construction with dtype derivation and verification, the ALU helpers.
#include "uop/uop.h"
#include "uop/nodemap.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>
#include <sstream>
#include <unordered_set>

namespace tg {

// ***** 1. Arg and ParamArg *****

namespace {
[[noreturn]] void bad_arg(const char* want, const Arg& a) { internal_error(std::string("arg is not ") + want + ": " + a.str()); }
size_t mix(size_t h, size_t v) { return (h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2))); }
}  // namespace

const ConstVal& Arg::cval() const { if (auto* c = std::get_if<ConstVal>(&v)) return *c; bad_arg("a constant", *this); }
int64_t Arg::i() const { if (auto* c = std::get_if<int64_t>(&v)) return *c; bad_arg("an int", *this); }
const Arg::Ints& Arg::ints() const { if (auto* c = std::get_if<Ints>(&v)) return *c; bad_arg("a tuple of ints", *this); }
const std::string& Arg::s() const { if (auto* c = std::get_if<std::string>(&v)) return *c; bad_arg("a string", *this); }
DType Arg::dtype() const { if (auto* c = std::get_if<DType>(&v)) return *c; bad_arg("a dtype", *this); }
const ParamArg& Arg::param() const {
  if (auto* c = std::get_if<std::shared_ptr<const ParamArg>>(&v)) return **c;
  bad_arg("a ParamArg", *this);
}

bool ParamArg::operator==(const ParamArg& o) const {
  auto mm_eq = [](auto& a, auto& b) { return a.has_value() == b.has_value() && (!a || (a->first.same(b->first) && a->second.same(b->second))); };
  return slot == o.slot && dtype == o.dtype && mm_eq(vmin_vmax, o.vmin_vmax) && multiple_of == o.multiple_of && name == o.name &&
         addrspace == o.addrspace && axis == o.axis && device == o.device && is_volatile == o.is_volatile;
}

std::string ParamArg::str() const {
  std::ostringstream os;
  os << "ParamArg(" << slot << ", " << dtype;
  if (vmin_vmax) os << ", vmin_vmax=(" << vmin_vmax->first << ", " << vmin_vmax->second << ")";
  if (multiple_of) os << ", multiple_of=" << *multiple_of;
  if (name) os << ", name='" << *name << "'";
  if (addrspace != AddrSpace::GLOBAL) {
    static const char* names[] = {"", "GLOBAL", "LOCAL", "REG", "ALU"};
    os << ", addrspace=" << (addrspace ? std::string("AddrSpace.") + names[int(*addrspace)] : "None");
  }
  if (axis) os << ", axis=" << *axis;
  if (!device.empty()) os << ", device='" << device << "'";
  if (is_volatile) os << ", volatile=True";
  return os.str() + ")";
}

bool Arg::operator==(const Arg& o) const {
  if (v.index() != o.v.index()) return false;
  return std::visit([&](const auto& a) -> bool {
    using T = std::decay_t<decltype(a)>;
    const T& b = std::get<T>(o.v);
    if constexpr (std::is_same_v<T, ConstVal>) return a.same(b);
    else if constexpr (std::is_same_v<T, std::shared_ptr<const ParamArg>>) return a == b || *a == *b;
    else if constexpr (std::is_same_v<T, std::shared_ptr<const ArgObject>>) return a == b || a->equals(*b);
    else if constexpr (std::is_same_v<T, std::monostate>) return true;
    else return a == b;
  }, v);
}

bool Arg::matches(const Arg& o) const {
  if (auto* a = std::get_if<ConstVal>(&v)) {
    if (auto* b = std::get_if<ConstVal>(&o.v)) return *a == *b;
    if (auto* b = std::get_if<int64_t>(&o.v)) return !a->is_invalid() && *a == ConstVal(*b);
    return false;
  }
  return *this == o;
}

size_t Arg::hash() const {
  switch (v.index()) {
    case 0: return 0;
    case 1: return mix(1, std::get<ConstVal>(v).hash());
    case 2: return mix(2, std::hash<int64_t>()(std::get<int64_t>(v)));
    case 3: { size_t h = 3; for (auto x : std::get<Ints>(v)) h = mix(h, std::hash<int64_t>()(x)); return h; }
    case 4: return mix(4, std::hash<std::string>()(std::get<std::string>(v)));
    case 5: return mix(5, size_t(std::get<DType>(v).id));
    case 6: {
      const ParamArg& a = *std::get<std::shared_ptr<const ParamArg>>(v);
      return mix(mix(mix(6, std::hash<int64_t>()(a.slot)), size_t(a.dtype.id)), std::hash<std::string>()(a.name.value_or("")));
    }
    default: return mix(7, std::get<std::shared_ptr<const ArgObject>>(v)->hash());
  }
}

std::string Arg::str() const {
  return std::visit([](const auto& a) -> std::string {
    using T = std::decay_t<decltype(a)>;
    if constexpr (std::is_same_v<T, std::monostate>) return "None";
    else if constexpr (std::is_same_v<T, ConstVal>) return a.str();
    else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(a);
    else if constexpr (std::is_same_v<T, Ints>) {
      std::string s = "(";
      for (size_t i = 0; i < a.size(); i++) s += (i ? ", " : "") + std::to_string(a[i]);
      return s + (a.size() == 1 ? ",)" : ")");
    } else if constexpr (std::is_same_v<T, std::string>) return "'" + a + "'";
    else if constexpr (std::is_same_v<T, DType>) { std::ostringstream os; os << a; return os.str(); }
    else return a->str();
  }, v);
}

int arg_compare(const Arg& a, const Arg& b) {
  if (a.v.index() != b.v.index()) return a.v.index() < b.v.index() ? -1 : 1;
  auto cmp = [](const auto& x, const auto& y) { return x < y ? -1 : y < x ? 1 : 0; };
  return std::visit([&](const auto& x) -> int {
    using T = std::decay_t<decltype(x)>;
    const T& y = std::get<T>(b.v);
    if constexpr (std::is_same_v<T, std::monostate>) return 0;
    else if constexpr (std::is_same_v<T, ConstVal>) {
      if (x.is_invalid() || y.is_invalid()) return cmp(int(x.is_invalid()), int(y.is_invalid()));
      return x == y ? 0 : cmp(x, y);
    } else if constexpr (std::is_same_v<T, std::shared_ptr<const ParamArg>>) {
      // dataclass order: slot, dtype, vmin_vmax, multiple_of, name, ...
      if (int c = cmp(x->slot, y->slot)) return c;
      if (x->dtype != y->dtype) return x->dtype < y->dtype ? -1 : 1;
      if (x->vmin_vmax && y->vmin_vmax) {
        if (!(x->vmin_vmax->first == y->vmin_vmax->first)) return cmp(x->vmin_vmax->first, y->vmin_vmax->first);
        if (!(x->vmin_vmax->second == y->vmin_vmax->second)) return cmp(x->vmin_vmax->second, y->vmin_vmax->second);
      } else if (int c = cmp(x->vmin_vmax.has_value(), y->vmin_vmax.has_value())) return c;
      if (int c = cmp(x->multiple_of, y->multiple_of)) return c;
      return cmp(x->name, y->name);
    } else if constexpr (std::is_same_v<T, std::shared_ptr<const ArgObject>>) return cmp(x->str(), y->str());
    else return cmp(x, y);
  }, a.v);
}

// ***** 2. the hash-cons table *****

namespace {
size_t key_hash(Ops op, DType dtype, Srcs src, const Arg& arg, const Arg& tag) {
  size_t h = mix(size_t(op) * 131 + size_t(dtype.id), arg.hash());
  for (const UOp& s : src) h = mix(h, size_t(s.get()) >> 4);
  if (!tag.none()) h = mix(h, tag.hash());
  h ^= h >> 31, h *= 0xBF58476D1CE4E5B9ull, h ^= h >> 29;  // spread the bits for linear probing
  return h;
}

// the hash-cons table: open addressing with linear probing over (hash, node) slots, backward-shift deletion
class Table {
 public:
  Table() : slots_(1 << 12) {}  // small: the table is probed on every node built, it should stay in cache
  size_t size() const { return count_; }
  const UOpNode* find(size_t h, Ops op, DType dtype, Srcs src, const Arg& arg, const Arg& tag) const {
    for (size_t i = h & mask(); slots_[i].node; i = (i + 1) & mask()) {
      const UOpNode* n = slots_[i].node;
      if (slots_[i].hash != h || n->op != op || n->dtype != dtype || n->nsrc != src.size()) continue;
      bool same = true;
      for (size_t k = 0; k < src.size() && same; k++) same = src.ptr[k].get() == n->srcs()[k].get();
      if (same && n->arg == arg && n->tag == tag) return n;
    }
    return nullptr;
  }
  void insert(const UOpNode* n) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    size_t i = n->hash & mask();
    while (slots_[i].node) i = (i + 1) & mask();
    slots_[i] = {n->hash, n};
    count_++;
  }
  void erase(const UOpNode* n) {
    size_t i = n->hash & mask();
    while (slots_[i].node != n) {
      if (!slots_[i].node) internal_error("hash-cons table lost a node");
      i = (i + 1) & mask();
    }
    // shift later members of the probe run back into the hole
    for (size_t j = (i + 1) & mask(); slots_[j].node; j = (j + 1) & mask()) {
      size_t home = slots_[j].hash & mask();
      bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) slots_[i] = slots_[j], i = j;
    }
    slots_[i] = {0, nullptr};
    count_--;
  }

 private:
  struct Slot { size_t hash; const UOpNode* node; };
  size_t mask() const { return slots_.size() - 1; }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    count_ = 0;
    for (auto& s : old) if (s.node) insert(s.node);
  }
  std::vector<Slot> slots_;
  size_t count_ = 0;
};
Table& table() { static Table* t = new Table(); return *t; }  // never destroyed: nodes may outlive static dtors

// Every global here is constant-initialized or a function-local static that is never destroyed: nodes are built by
// other translation units' static initializers (before this file's would run) and released by their destructors.
// A free list threaded through the freed blocks themselves: plain data, so constant-initialized and never destroyed,
// and no guard check on the hot path
struct FreeList {
  void* head = nullptr;
  uint32_t size = 0;
  void* pop() {
    void* m = head;
    if (m) head = *static_cast<void**>(m), size--;
    return m;
  }
  bool push(void* m) {
    if (size >= 65536) return false;
    *static_cast<void**>(m) = head, head = m, size++;
    return true;
  }
};
// freed nodes with up to 4 sources are kept on free lists by source count and reused (graphs churn small nodes)
constexpr uint32_t POOLED_SRCS = 4;
constinit FreeList free_nodes[POOLED_SRCS + 1];
void* alloc_node(uint32_t nsrc) {
  if (void* m = nsrc <= POOLED_SRCS ? free_nodes[nsrc].pop() : nullptr) return m;
  return ::operator new(sizeof(UOpNode) + nsrc * sizeof(UOp));
}
void free_node(void* m, uint32_t nsrc) {
  if (nsrc > POOLED_SRCS || !free_nodes[nsrc].push(m)) ::operator delete(m);
}

constinit bool releasing = false;
std::vector<const UOpNode*>& release_queue() { static auto* q = new std::vector<const UOpNode*>(); return *q; }
}  // namespace

size_t live_uops() { return table().size(); }

static void (*buffer_release_hook)(const UOpNode*) = nullptr;
void set_buffer_release_hook(void (*hook)(const UOpNode*)) { buffer_release_hook = hook; }

void release_uop(const UOpNode* n) {
  std::vector<const UOpNode*>& queue = release_queue();
  queue.push_back(n);
  if (releasing) return;
  releasing = true;
  while (!queue.empty()) {
    const UOpNode* x = queue.back();
    queue.pop_back();
    table().erase(x);
    if (x->op == Ops::BUFFER && buffer_release_hook) buffer_release_hook(x);
    UOpNode* m = const_cast<UOpNode*>(x);
    UOp* srcs = const_cast<UOp*>(m->srcs());
    uint32_t nsrc = m->nsrc;
    for (uint32_t i = 0; i < nsrc; i++) srcs[i].~UOp();  // may queue sources, never recurses
    m->~UOpNode();
    free_node(m, nsrc);
  }
  releasing = false;
}

// ***** 3. dtype derivation and verification *****

namespace {
DType promo_dtype(std::span<const UOp> src) {
  DType d = src[0].dtype();
  bool same = true;
  for (auto& s : src) same &= s.dtype() == d;
  if (same) return d;
  DType r = src[0].dtype();
  for (size_t i = 1; i < src.size(); i++) r = least_upper_dtype({r, src[i].dtype()});
  return r;
}
bool base_is_invalid(const UOp& u) { return u.op() == Ops::CONST && u.arg().cval().is_invalid(); }
}  // namespace

std::optional<DType> dtype_from_uop(Ops op, Srcs src, const Arg& arg) {
  using enum Ops;
  std::span<const UOp> s(src.begin(), src.size());
  auto need = [&](size_t n) { if (s.size() < n) throw Error(std::string(op_name(op)) + " needs at least " + std::to_string(n) + " sources"); };
  switch (op) {
    case STORE: case LINEAR: case SINK: case PROGRAM: case SOURCE: case END: case BARRIER: case GROUP: case IF: case ENDIF:
    case TUPLE: case FUNCTION: case CUSTOM_FUNCTION: case REWRITE_ERROR: return dtypes::void_;
    case CALL: need(1); if (s[0].dtype() == dtypes::void_) return dtypes::void_; return std::nullopt;
    case CUSTOM: case CUSTOMI: case PYLITERAL: case INS: case NOOP: return std::nullopt;
    case INDEX: need(1); return s[0].dtype();
    case LOAD: case UNSHARD: case REDUCE: case AFTER: case RANGE: case CONTIGUOUS: case CONTIGUOUS_BACKWARD: case COPY: case STAGE:
    case DETACH: case MSTACK: case MSELECT: case ALLREDUCE: case SPECIAL: need(1); return s[0].dtype();
    case CMPLT: case CMPNE: case CMPEQ: return dtypes::bool_;
    case SIN: case LOG2: case EXP2: case SQRT: case RECIPROCAL:
      need(1); return base_is_invalid(s[0]) ? dtypes::bool_ : least_upper_float(s[0].dtype());
    case WHERE:
      need(3);
      if (s[0].dtype() != dtypes::bool_) throw Error("WHERE: condition must be bool, got " + std::string(s[0].dtype().name()));
      return promo_dtype(s.subspan(1));
    case STACK: return s.empty() ? dtypes::void_ : promo_dtype(s);
    case WMMA: need(3); return s[2].dtype();
    case GETTUPLE: {  // the dtype of that output of the TUPLE (through its FUNCTION)
      need(1);
      const UOp& t = s[0].op() == FUNCTION ? s[0].src(0) : s[0];
      if (t.op() != TUPLE || !arg.is<int64_t>() || arg.i() < 0 || size_t(arg.i()) >= t.src().size())
        throw Error("GETTUPLE: needs a TUPLE (or a FUNCTION of one) and an output index in range, got " + std::string(op_name(t.op())) + " and " + arg.str());
      return t.src(size_t(arg.i())).dtype();
    }
    case GETADDR: return dtypes::uint64;
    case SHL: case SHR:
      for (auto& x : s)
        if (!x.dtype().is_int() && !base_is_invalid(x)) throw Error(std::string(op_name(op)) + ": shift operands must be int, got " + std::string(x.dtype().name()));
      need(1); return s[0].dtype();
    case BUFFER: case PARAM: return arg.param().dtype;
    case BINARY: return dtypes::uint8;
    case CAST: case BITCAST:
      if (!arg.is<DType>()) throw Error(std::string(op_name(op)) + ": arg must be the target dtype, got " + arg.str());
      return arg.dtype();
    case CONST: {
      const ConstVal& c = arg.cval();
      return c.is_invalid() || c.is_bool() ? dtypes::bool_ : c.is_int() ? dtypes::weakint : dtypes::weakfloat;
    }
    default: break;
  }
  if (GroupOp::Unary.has(op)) { need(1); return s[0].dtype(); }
  if (GroupOp::Broadcastable.has(op)) { need(1); return promo_dtype(s); }
  if (GroupOp::Movement.has(op)) { need(1); return s[0].dtype(); }
  return std::nullopt;
}

namespace {
[[noreturn]] void verify_fail(Ops op, DType dt, Srcs src, const std::string& why) {
  std::string s = "UOp verification failed on " + std::string(op_name(op)) + " (" + std::string(dt.name()) + ") with sources [";
  for (size_t i = 0; i < src.size(); i++) s += (i ? ", " : "") + std::string(op_name(src.ptr[i].op())) + ":" + std::string(src.ptr[i].dtype().name());
  throw Error(s + "]: " + why);
}
// Invalid matches any dtype, also seen through movement ops (tinygrad's matches_dtype looks at x.base)
bool dtype_ok(const UOp& x, DType want) {
  if (x.dtype() == want || x.dtype().is_weak()) return true;
  const UOp* b = &x;
  while (GroupOp::Movement.has(b->op()) || b->op() == Ops::DETACH) b = &b->src(0);
  return base_is_invalid(*b);
}

// the structural checks a verifier can do at construction: source counts, arg kinds, operand dtypes
void verify(Ops op, DType dt, Srcs src, const Arg& arg) {
  using enum Ops;
  size_t n = src.size();
  auto count = [&](size_t want) { if (n != want) verify_fail(op, dt, src, "expects " + std::to_string(want) + " source(s), got " + std::to_string(n)); };
  if (GroupOp::Unary.has(op)) count(1);
  else if (GroupOp::Binary.has(op)) count(2);
  else if (GroupOp::Ternary.has(op)) count(3);
  switch (op) {
    case CONST:
      count(0);
      if (!arg.is<ConstVal>()) verify_fail(op, dt, src, "arg must be a constant, got " + arg.str());
      if (arg.cval().is_invalid() ? dt != dtypes::bool_ : (dt.is_float() != arg.cval().is_float() || dt.is_bool() != arg.cval().is_bool()))
        verify_fail(op, dt, src, "constant " + arg.cval().str() + " does not have the kind of its dtype");
      return;
    case CAST: case BITCAST:
      count(1);
      if (!arg.is<DType>()) verify_fail(op, dt, src, "arg must be a dtype, got " + arg.str());
      return;
    case WHERE:
      if (src.ptr[0].dtype() != dtypes::bool_) verify_fail(op, dt, src, "condition must be bool");
      for (size_t i = 1; i < 3; i++) if (!dtype_ok(src.ptr[i], dt)) verify_fail(op, dt, src, "branch dtype does not match");
      return;
    case CMPLT: case CMPNE: case CMPEQ: {
      const UOp &x = src.ptr[0], &y = src.ptr[1];
      if (dt != dtypes::bool_) verify_fail(op, dt, src, "a comparison is bool");
      if (!(dtype_ok(x, y.dtype()) || dtype_ok(y, x.dtype()))) verify_fail(op, dt, src, "operand dtypes do not match");
      return;
    }
    case SHL: case SHR: return;
    case RANGE: case SPECIAL: if (n < 1) verify_fail(op, dt, src, "needs its end as source 0"); return;
    case BUFFER: case PARAM: if (!arg.is<std::shared_ptr<const ParamArg>>()) verify_fail(op, dt, src, "arg must be a ParamArg"); return;
    default: break;
  }
  if (GroupOp::ALU.has(op)) {
    if ((OpSet{AND, OR, XOR}).has(op))
      for (auto& s : src) if (s.dtype().is_float()) verify_fail(op, dt, src, "bitwise ops need int or bool operands");
    if ((OpSet{CDIV, CMOD, FLOORDIV, FLOORMOD}).has(op) && !dt.is_int())
      verify_fail(op, dt, src, "integer division needs int operands");
    // transcendentals of an int produce its float (least_upper_float), everything else keeps its operands' dtype
    bool to_float = (OpSet{SIN, LOG2, EXP2, SQRT, RECIPROCAL}).has(op) && dt == least_upper_float(src.ptr[0].dtype());
    if (!to_float) for (auto& s : src) if (!dtype_ok(s, dt)) verify_fail(op, dt, src, "operand dtype does not match the result");
  }
}
}  // namespace

// ***** 4. construction *****

UOp UOp::make(Ops op, DType dtype, Srcs src, const Arg& arg, const Arg& tag) {
  size_t h = key_hash(op, dtype, src, arg, tag);
  Table& t = table();
  if (const UOpNode* n = t.find(h, op, dtype, src, arg, tag)) return UOp(n);
  verify(op, dtype, src, arg);
  void* mem = alloc_node(uint32_t(src.size()));
  UOpNode* n = new (mem) UOpNode{0, op, dtype, uint32_t(src.size()), h, arg, tag};
  static std::atomic<uint64_t> serials{1};
  n->serial = serials.fetch_add(1, std::memory_order_relaxed);
  UOp* out = const_cast<UOp*>(n->srcs());
  n->ops_below.add(op);
  for (size_t i = 0; i < src.size(); i++) new (out + i) UOp(src.ptr[i]), n->ops_below = n->ops_below | src.ptr[i].get()->ops_below;
  t.insert(n);
  return UOp(n);
}

UOp UOp::make(Ops op, Srcs src, const Arg& arg) {
  return make(op, dtype_from_uop(op, src, arg).value_or(dtypes::void_), src, arg);
}

UOp UOp::replace(const Replace& r) const {
  Ops op2 = r.op.value_or(op());
  DType dt = r.dtype.value_or(dtype());
  Srcs s = r.src ? Srcs(*r.src) : Srcs(src());
  const Arg& a = r.arg ? *r.arg : arg();
  const Arg& t = r.tag ? *r.tag : tag();
  if (op2 == op() && dt == dtype() && a == arg() && t == tag() && s.size() == src().size() &&
      std::equal(s.begin(), s.end(), src().begin()))
    return *this;
  return make(op2, dt, s, a, t);
}

UOp UOp::const_(ConstVal v, std::optional<DType> dtype) {
  DType dt = v.is_invalid() || !dtype ? (v.is_invalid() || v.is_bool() ? dtypes::bool_ : v.is_int() ? dtypes::weakint : dtypes::weakfloat) : *dtype;
  return make(Ops::CONST, dt, {}, Arg(dt.const_(v)));
}
UOp UOp::invalid() { return const_(ConstVal::invalid()); }

UOp UOp::variable(const std::string& name, int64_t min_val, int64_t max_val, DType dtype) {
  if (min_val > max_val) throw Error("variable '" + name + "': min " + std::to_string(min_val) + " > max " + std::to_string(max_val));
  ParamArg pa{-1, dtype, std::pair<ConstVal, ConstVal>{min_val, max_val}, 1, name, AddrSpace::ALU};
  return make(Ops::BUFFER, dtype, {stack({})}, Arg(std::move(pa)));
}

UOp UOp::range(int64_t end, int64_t axis_id, AxisType type, DType dtype) { return range(const_(end, dtype), axis_id, type, dtype); }
UOp UOp::range(const UOp& end, int64_t axis_id, AxisType type, DType dtype) {
  return make(Ops::RANGE, dtype, {end.cast(dtype)}, Arg{axis_id, int64_t(type)});
}
UOp UOp::special(int64_t end, const std::string& name, DType dtype) { return make(Ops::SPECIAL, dtype, {const_(end, dtype)}, Arg(name)); }
UOp UOp::sink(Srcs srcs) { return make(Ops::SINK, dtypes::void_, srcs); }
UOp UOp::stack(Srcs srcs) { return make(Ops::STACK, srcs); }
UOp UOp::group(Srcs srcs) { return srcs.size() == 1 ? *srcs.begin() : make(Ops::GROUP, dtypes::void_, srcs); }

void src_out_of_range(size_t i, uint32_t nsrc) {
  internal_error("src(" + std::to_string(i) + ") of a node with " + std::to_string(nsrc) + " sources");
}

const ConstVal& UOp::val() const {
  if (op() != Ops::CONST) throw Error("val() is only for CONST, got " + std::string(op_name(op())));
  return arg().cval();
}
bool UOp::is_invalid() const { return op() == Ops::CONST && arg().cval().is_invalid(); }

// ***** 5. ALU helpers with tinygrad's promotion *****

UOp UOp::alu(Ops op, Srcs rest) const {
  if (rest.size() <= 3) {
    UOp s[4] = {*this};
    for (size_t i = 0; i < rest.size(); i++) s[i + 1] = rest.ptr[i];
    return make(op, std::span<const UOp>(s, rest.size() + 1));
  }
  std::vector<UOp> s{*this};
  s.insert(s.end(), rest.begin(), rest.end());
  return make(op, s);
}
UOp UOp::cast(DType dt) const { return dtype() == dt ? *this : make(Ops::CAST, dt, {*this}, Arg(dt)); }
UOp UOp::bitcast(DType dt) const {
  if (dtype().is_weak() || dt.is_weak()) throw Error("bitcast requires concrete dtypes, got dtypes." + std::string(dtype().name()) + " -> dtypes." + std::string(dt.name()));
  return dtype() == dt ? *this : make(Ops::BITCAST, dt, {*this}, Arg(dt));
}
UOp UOp::const_like(ConstVal v) const { return const_(v, dtype()); }

namespace {
// keep a bare weak CONST weak (lifted to the weak kind of the result), cast anything else to the result dtype
UOp promote(const UOp& t, DType out) {
  if (t.dtype() == out || base_is_invalid(t)) return t;
  if (t.dtype().is_weak() && t.op() == Ops::CONST) return UOp::const_(t.val(), weak_dtype(out));
  return t.cast(out);
}
}  // namespace

UOp UOp::binop(Ops op, const UOp& y, bool reverse) const {
  const UOp &a = reverse ? y : *this, &b = reverse ? *this : y;
  DType out = least_upper_dtype({a.dtype(), b.dtype()});
  return promote(a, out).alu(op, {promote(b, out)});
}

UOp UOp::neg() const { return dtype() == dtypes::bool_ ? logical_not() : uop_mul(*this, const_(int64_t(-1))); }
UOp UOp::logical_not() const { return cast(dtypes::bool_).ne(const_(true)); }
UOp UOp::bitwise_not() const {
  if (dtype() == dtypes::bool_) return logical_not();
  // all ones of the width: max() for narrow unsigned types, the bit pattern -1 for uint64 (whose max exceeds int64)
  bool u64 = dtype() == dtypes::uint64;
  return dtype().is_unsigned() && !u64 ? uop_xor(*this, const_(dtype().max())) : uop_xor(*this, const_(int64_t(-1)));
}
UOp UOp::ne(const UOp& x) const { return binop(Ops::CMPNE, x); }
UOp UOp::eq(const UOp& x) const { return ne(x).logical_not(); }
UOp UOp::maximum(const UOp& x) const { return binop(Ops::MAX, x); }
UOp UOp::minimum(const UOp& x) const {
  DType dt = least_upper_dtype({dtype(), x.dtype()});
  UOp t = promote(*this, dt), y = promote(x, dt);
  if (dt.is_float()) return uop_mul(uop_mul(t, lit(-1)).alu(Ops::MAX, {uop_mul(y, lit(-1))}), lit(-1));
  // ints: min(a,b) = ~max(~a,~b) with the xor constant min+max of the dtype
  UOp k = const_(ConstVal(int64_t(uint64_t(dt.min().i) + uint64_t(dt.max().i))));
  return uop_xor(uop_xor(t, k).alu(Ops::MAX, {uop_xor(y, k)}), k);
}
UOp UOp::where(const UOp& x, const UOp& y) const {
  DType out = least_upper_dtype({x.dtype(), y.dtype()});
  return alu(Ops::WHERE, {promote(x, out), promote(y, out)});
}
UOp UOp::pow(const UOp& x) const { return binop(Ops::POW, x); }
UOp UOp::valid(const UOp& cond) const { return cond.where(*this, invalid()); }
UOp UOp::get_idx() const {
  if (op() == Ops::STACK) { std::vector<UOp> s; for (auto& x : src()) s.push_back(x.get_idx()); return stack(s); }
  return op() == Ops::WHERE && src(2).is_invalid() ? src(1) : *this;
}
UOp UOp::get_valid() const {
  if (op() == Ops::STACK) { std::vector<UOp> s; for (auto& x : src()) s.push_back(x.get_valid()); return stack(s); }
  return op() == Ops::WHERE && src(2).is_invalid() ? src(0) : const_(!is_invalid());
}
UOp UOp::usum(Srcs rest) const {
  UOp r = *this;
  for (auto& x : rest) r = dtype() == dtypes::bool_ ? uop_or(r, x) : uop_add(r, x);
  return r;
}
UOp UOp::uprod(Srcs rest) const {
  UOp r = *this;
  for (auto& x : rest) r = dtype() == dtypes::bool_ ? uop_and(r, x) : uop_mul(r, x);
  return r;
}
UOp UOp::index(Srcs idx) const {
  // a constant index into a STACK is that element (no INDEX node for the rewrite to fold away)
  if (op() == Ops::STACK && idx.size() == 1 && idx.begin()->op() == Ops::CONST)
    if (uint64_t i = uint64_t(idx.begin()->val().as_int()); i < src().size()) return src(i);
  return alu(Ops::INDEX, idx);
}
UOp UOp::load(Srcs rest) const { return alu(Ops::LOAD, rest); }
UOp UOp::store(const UOp& v) const { return make(Ops::STORE, dtypes::void_, {*this, v}); }
UOp UOp::after(Srcs deps) const { return deps.size() ? alu(Ops::AFTER, deps) : *this; }
UOp UOp::end(Srcs ranges) const { return ranges.size() ? make(Ops::END, dtypes::void_, [&] { std::vector<UOp> s{*this}; s.insert(s.end(), ranges.begin(), ranges.end()); return s; }()) : *this; }

UOp uop_add(const UOp& a, const UOp& b) { return a.binop(Ops::ADD, b); }
UOp uop_sub(const UOp& a, const UOp& b) {
  DType out = least_upper_dtype({a.dtype(), b.dtype()});
  return promote(a, out).alu(Ops::ADD, {promote(b, out).neg()});
}
UOp uop_mul(const UOp& a, const UOp& b) { return a.binop(Ops::MUL, b); }
UOp uop_floordiv(const UOp& a, const UOp& b) {
  DType out = least_upper_dtype({a.dtype(), b.dtype()});
  UOp x = promote(a, out), y = promote(b, out);
  if (x.dtype().is_int() && y.dtype().is_int()) return x.alu(Ops::FLOORDIV, {y});
  if (x.dtype().is_int() || x.dtype().is_bool()) x = x.cast(dtypes::default_float);
  return x.alu(Ops::MUL, {y.reciprocal()});
}
UOp uop_mod(const UOp& a, const UOp& b) {
  DType out = least_upper_dtype({a.dtype(), b.dtype()});
  UOp x = promote(a, out), y = promote(b, out);
  if (!x.dtype().is_int() || !y.dtype().is_int()) throw Error("MOD on " + std::string(out.name()) + ": use ints (float modulo comes with the Tensor API)");
  return x.alu(Ops::FLOORMOD, {y});
}
UOp uop_lt(const UOp& a, const UOp& b) { return a.binop(Ops::CMPLT, b); }
UOp uop_gt(const UOp& a, const UOp& b) { return a.binop(Ops::CMPLT, b, true); }
UOp uop_le(const UOp& a, const UOp& b) { return uop_gt(a, b).logical_not(); }
UOp uop_ge(const UOp& a, const UOp& b) { return uop_lt(a, b).logical_not(); }
UOp uop_and(const UOp& a, const UOp& b) { return a.binop(Ops::AND, b); }
UOp uop_or(const UOp& a, const UOp& b) { return a.binop(Ops::OR, b); }
UOp uop_xor(const UOp& a, const UOp& b) { return a.binop(Ops::XOR, b); }
UOp uop_shl(const UOp& a, const UOp& b) { return a.binop(Ops::SHL, b); }
UOp uop_shr(const UOp& a, const UOp& b) { return a.binop(Ops::SHR, b); }

// ***** 6. graph properties: toposort, key, shape *****

namespace {
constinit FreeList free_caches;
}
UOpNode::Cache& UOpNode::props() const {
  if (!cache) {
    void* m = free_caches.pop();
    cache.reset(m ? new (m) Cache() : new Cache());
  }
  return *cache;
}
void UOpNode::CacheDeleter::operator()(Cache* c) const {
  c->~Cache();
  if (!free_caches.push(c)) ::operator delete(c);
}

const std::vector<const UOpNode*>& UOp::topo_nodes() const {
  p->props();
  auto& topo = p->cache->topo;
  if (topo) return *topo;
  std::vector<const UOpNode*> out;
  static thread_local NodeMap<bool> seen;  // reused (as is the stack): toposort never re-enters itself
  static thread_local std::vector<std::pair<const UOpNode*, bool>> stack;
  struct Clear { ~Clear() { seen.clear(), stack.clear(); } } clear_after;
  stack.push_back({p, false});
  while (!stack.empty()) {
    auto [n, visited] = stack.back();
    stack.pop_back();
    if (!visited) {
      if (seen.contains(UOp(n))) continue;
      stack.push_back({n, true});
      for (uint32_t i = n->nsrc; i-- > 0;) stack.push_back({n->srcs()[i].get(), false});
    } else if (seen.try_emplace(UOp(n)).second) {
      out.push_back(n);
    }
  }
  topo = std::move(out);
  return *topo;
}
std::vector<UOp> UOp::toposort() const {
  std::vector<UOp> r;
  for (auto* n : topo_nodes()) r.emplace_back(n);
  return r;
}

bool UOp::in_backward_slice_with_self(const UOp& x) const {
  for (auto* n : topo_nodes()) if (n == x.get()) return true;
  return false;
}
bool UOp::op_in_backward_slice_with_self(OpSet ops) const { return p->ops_below.intersects(ops); }

}  // namespace tg
