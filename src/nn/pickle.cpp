// The pickle opcodes (CPython's Lib/pickletools.py documents each) that torch.save's protocol 2 and pickle protocol 4
// emit. Globals are only named; REDUCE / NEWOBJ record a Call, except collections.OrderedDict, which is a dict.
#include "nn/pickle.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "tg/error.h"

namespace tg::nn::pickle {

namespace {

struct Machine {
  std::span<const uint8_t> b;
  uint64_t& pos;
  const std::string& what;
  Pickle p;
  std::vector<Ref> stack;
  std::vector<size_t> marks;
  std::unordered_map<uint64_t, Ref> memo;
  uint64_t op_at = 0;
  uint8_t op = 0;

  Error bad(const std::string& why) const {
    char h[8];
    std::snprintf(h, sizeof h, "0x%02x", op);
    return Error(what + ": pickle opcode " + h + " at byte " + std::to_string(op_at) + ": " + why);
  }
  const uint8_t* take(uint64_t n) {
    if (n > b.size() - pos) throw bad("truncated (needs " + std::to_string(n) + " more bytes, " + std::to_string(b.size() - pos) + " left)");
    const uint8_t* r = b.data() + pos;
    pos += n;
    return r;
  }
  uint64_t u(int n) {
    const uint8_t* d = take(uint64_t(n));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | d[i];
    return v;
  }
  std::string line() {
    const uint8_t* s = b.data() + pos;
    const void* nl = std::memchr(s, '\n', b.size() - pos);
    if (!nl) throw bad("no newline");
    uint64_t n = uint64_t(static_cast<const uint8_t*>(nl) - s);
    pos += n + 1;
    return std::string(reinterpret_cast<const char*>(s), n);
  }
  Ref make(Obj o) {
    if (p.arena.size() >= UINT32_MAX) throw bad("too many objects");
    p.arena.push_back(std::move(o));
    return Ref(p.arena.size() - 1);
  }
  Ref pop() {
    if (stack.empty() || (!marks.empty() && stack.size() <= marks.back())) throw bad("stack underflow");
    Ref r = stack.back();
    stack.pop_back();
    return r;
  }
  Ref& top() {
    if (stack.empty() || (!marks.empty() && stack.size() <= marks.back())) throw bad("stack underflow");
    return stack.back();
  }
  std::vector<Ref> pop_mark() {
    if (marks.empty()) throw bad("no MARK");
    std::vector<Ref> r(stack.begin() + ptrdiff_t(marks.back()), stack.end());
    stack.resize(marks.back());
    marks.pop_back();
    return r;
  }
  Ref str(Obj::Kind k, uint64_t n) {
    const uint8_t* d = take(n);
    Obj o{k};
    o.s.assign(reinterpret_cast<const char*>(d), n);
    return make(std::move(o));
  }
  Ref integer(uint64_t n) {  // LONG1 / LONG4: little-endian two's complement
    const uint8_t* d = take(n);
    Obj o{Obj::Int};
    if (n > 8) {
      o.kind = Obj::BigInt;
      o.s.assign(reinterpret_cast<const char*>(d), n);
      return make(std::move(o));
    }
    uint64_t v = 0;
    for (uint64_t i = n; i-- > 0;) v = v << 8 | d[i];
    if (n && n < 8 && (d[n - 1] & 0x80)) v |= ~uint64_t(0) << (8 * n);
    o.i = int64_t(v);
    return make(std::move(o));
  }
  Ref tuple(std::vector<Ref> items) {
    Obj o{Obj::Tuple};
    o.items = std::move(items);
    return make(std::move(o));
  }
  Obj& container(Ref r, Obj::Kind k, const char* name) {
    if (p.arena[r].kind != k) throw bad(std::string(name) + " on something that is not a " + (k == Obj::List ? "list" : "dict"));
    return p.arena[r];
  }
  Ref global(std::string mod, const std::string& name) {
    Obj o{Obj::Global};
    o.s = std::move(mod) + "." + name;
    return make(std::move(o));
  }
  Ref call(Ref fn, Ref args) {
    if (p.arena[fn].kind == Obj::Global && p.arena[fn].s == "collections.OrderedDict") {
      if (p.arena[args].kind != Obj::Tuple || !p.arena[args].items.empty()) throw bad("OrderedDict with arguments is not supported");
      return make(Obj{Obj::Dict});
    }
    if (p.arena[args].kind != Obj::Tuple) throw bad("call arguments are not a tuple");
    Obj o{Obj::Call};
    o.items = {fn, args};
    return make(std::move(o));
  }

  void run() {
    for (;;) {
      op_at = pos;
      op = *take(1);
      switch (op) {
        case 0x80: if (u(1) > 5) throw bad("unknown protocol"); break;      // PROTO
        case 0x95: u(8); break;                                              // FRAME: a length hint only
        case '.': if (stack.size() != 1 || !marks.empty()) throw bad("STOP with " + std::to_string(stack.size()) + " objects on the stack"); p.root = stack[0]; return;
        case '(': marks.push_back(stack.size()); break;                      // MARK
        case '0': pop(); break;                                              // POP
        case '1': pop_mark(); break;                                         // POP_MARK
        case '2': stack.push_back(top()); break;                             // DUP
        case 'N': stack.push_back(0); break;                                 // NONE
        case 0x88: case 0x89: { Obj o{Obj::Bool}; o.i = op == 0x88; stack.push_back(make(std::move(o))); break; }
        case 'K': case 'M': case 'J': {                                      // BININT1, BININT2, BININT
          Obj o{Obj::Int};
          o.i = op == 'K' ? int64_t(u(1)) : op == 'M' ? int64_t(u(2)) : int64_t(int32_t(uint32_t(u(4))));
          stack.push_back(make(std::move(o)));
          break;
        }
        case 0x8a: stack.push_back(integer(u(1))); break;                    // LONG1
        case 0x8b: { uint64_t n = u(4); if (n >> 31) throw bad("negative length"); stack.push_back(integer(n)); break; }  // LONG4
        case 'G': {                                                          // BINFLOAT: big-endian double
          const uint8_t* d = take(8);
          uint64_t v = 0;
          for (int i = 0; i < 8; i++) v = v << 8 | d[i];
          Obj o{Obj::Float};
          std::memcpy(&o.f, &v, 8);
          stack.push_back(make(std::move(o)));
          break;
        }
        case 0x8c: stack.push_back(str(Obj::Str, u(1))); break;              // SHORT_BINUNICODE
        case 'X': stack.push_back(str(Obj::Str, u(4))); break;               // BINUNICODE
        case 0x8d: stack.push_back(str(Obj::Str, u(8))); break;              // BINUNICODE8
        case 'U': stack.push_back(str(Obj::Bytes, u(1))); break;             // SHORT_BINSTRING
        case 'T': { uint64_t n = u(4); if (n >> 31) throw bad("negative length"); stack.push_back(str(Obj::Bytes, n)); break; }  // BINSTRING
        case 'C': stack.push_back(str(Obj::Bytes, u(1))); break;             // SHORT_BINBYTES
        case 'B': stack.push_back(str(Obj::Bytes, u(4))); break;             // BINBYTES
        case 0x8e: stack.push_back(str(Obj::Bytes, u(8))); break;            // BINBYTES8
        case ')': stack.push_back(tuple({})); break;                         // EMPTY_TUPLE
        case 0x85: { Ref a = pop(); stack.push_back(tuple({a})); break; }    // TUPLE1
        case 0x86: { Ref b2 = pop(), a = pop(); stack.push_back(tuple({a, b2})); break; }
        case 0x87: { Ref c = pop(), b2 = pop(), a = pop(); stack.push_back(tuple({a, b2, c})); break; }
        case 't': stack.push_back(tuple(pop_mark())); break;                 // TUPLE
        case ']': stack.push_back(make(Obj{Obj::List})); break;              // EMPTY_LIST
        case 'l': { Obj o{Obj::List}; o.items = pop_mark(); stack.push_back(make(std::move(o))); break; }  // LIST
        case '}': stack.push_back(make(Obj{Obj::Dict})); break;              // EMPTY_DICT
        case 'd': case 'u': {                                                // DICT, SETITEMS
          std::vector<Ref> items = pop_mark();
          if (items.size() % 2) throw bad("odd number of items for a dict");
          Ref d = op == 'd' ? make(Obj{Obj::Dict}) : top();
          Obj& o = container(d, Obj::Dict, "SETITEMS");
          for (size_t i = 0; i < items.size(); i += 2) o.kv.push_back({items[i], items[i + 1]});
          if (op == 'd') stack.push_back(d);
          break;
        }
        case 's': { Ref v = pop(), k = pop(); container(top(), Obj::Dict, "SETITEM").kv.push_back({k, v}); break; }
        case 'a': { Ref v = pop(); container(top(), Obj::List, "APPEND").items.push_back(v); break; }
        case 'e': { std::vector<Ref> items = pop_mark(); auto& l = container(top(), Obj::List, "APPENDS").items; l.insert(l.end(), items.begin(), items.end()); break; }
        case 'q': memo[u(1)] = top(); break;                                 // BINPUT
        case 'r': memo[u(4)] = top(); break;                                 // LONG_BINPUT
        case 0x94: memo[memo.size()] = top(); break;                         // MEMOIZE
        case 'h': case 'j': {                                                // BINGET, LONG_BINGET
          auto it = memo.find(u(op == 'h' ? 1 : 4));
          if (it == memo.end()) throw bad("memo key not defined");
          stack.push_back(it->second);
          break;
        }
        case 'c': { std::string m = line(), n = line(); stack.push_back(global(m, n)); break; }  // GLOBAL
        case 0x93: {                                                         // STACK_GLOBAL
          Ref n = pop(), m = pop();
          if (p.arena[m].kind != Obj::Str || p.arena[n].kind != Obj::Str) throw bad("module and name are not strings");
          stack.push_back(global(p.arena[m].s, p.arena[n].s));
          break;
        }
        case 'R': case 0x81: { Ref args = pop(), fn = pop(); stack.push_back(call(fn, args)); break; }  // REDUCE, NEWOBJ
        case 'b': {                                                          // BUILD: a state dict's _metadata, a Parameter's state
          Ref st = pop();
          Obj& o = p.arena[top()];
          if (o.kind == Obj::Call) o.state = st;
          else if (o.kind != Obj::Dict) throw bad("BUILD on something that is not an object");
          break;
        }
        case 'Q': { Obj o{Obj::Persistent}; o.items = {pop()}; stack.push_back(make(std::move(o))); break; }  // BINPERSID
        case 'P': { Obj s{Obj::Str}; s.s = line(); Ref r = make(std::move(s)); Obj o{Obj::Persistent}; o.items = {r}; stack.push_back(make(std::move(o))); break; }  // PERSID
        default: throw bad("not supported in torch checkpoints");
      }
    }
  }
};

}  // namespace

Pickle load(std::span<const uint8_t> bytes, uint64_t& pos, const std::string& what) {
  if (pos > bytes.size()) throw Error(what + ": pickle starts past the end of the data");
  Machine m{bytes, pos, what};
  m.run();
  return std::move(m.p);
}

}  // namespace tg::nn::pickle
