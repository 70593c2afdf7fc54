// A ProgramSpec as bytes for the disk cache (to_program's "program" table), and back. The reader checks every length
// against what is left and every enum against its range: a truncated or foreign record is a miss, never a crash.
#include <cstring>
#include <type_traits>

#include "codegen/pipeline.h"

namespace tg {

namespace {

constexpr std::string_view kMagic = "tgprog1";

struct Writer {
  std::string out;
  template <class T> void num(T v) { static_assert(std::is_arithmetic_v<T>); out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(std::string_view s) { num(uint32_t(s.size())), out.append(s); }
  void strs(const std::vector<std::string>& v) { num(uint32_t(v.size())); for (auto& s : v) str(s); }
  void ints(const std::vector<int>& v) { num(uint32_t(v.size())); for (int i : v) num(int32_t(i)); }
};

struct Reader {
  std::string_view in;
  bool ok = true;
  template <class T> T num() {
    T v{};
    if (in.size() < sizeof v) return ok = false, v;
    std::memcpy(&v, in.data(), sizeof v), in.remove_prefix(sizeof v);
    return v;
  }
  // a count of items at least `min_bytes` each must fit in what is left
  uint32_t count(size_t min_bytes) {
    uint32_t n = num<uint32_t>();
    if (size_t(n) * min_bytes > in.size()) ok = false, n = 0;
    return n;
  }
  std::string str() {
    uint32_t n = count(1);
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  std::vector<std::string> strs() { std::vector<std::string> v(count(4)); for (auto& s : v) s = str(); return v; }
  std::vector<int> ints() { std::vector<int> v(count(4)); for (auto& i : v) i = num<int32_t>(); return v; }
};

}  // namespace

std::string encode_program(const ProgramSpec& p) {
  Writer w;
  w.out.append(kMagic);
  w.str(p.name);
  w.str(p.kernel.name), w.str(p.kernel.src), w.str(p.kernel.entry_name);
  w.num(uint32_t(p.kernel.params.size()));
  for (const KernelParam& k : p.kernel.params) {
    w.str(k.name), w.num(k.slot), w.num(uint8_t(k.dtype.id)), w.num(uint8_t(k.addrspace)), w.num(uint8_t(k.writable)),
        w.num(uint8_t(k.is_volatile)), w.num(uint8_t(k.var_name.has_value())), w.str(k.var_name.value_or("")),
        w.num(k.numel), w.str(k.c_type);
  }
  for (int64_t d : p.global) w.num(d);
  for (int64_t d : p.local) w.num(d);
  w.ints(p.outs), w.ints(p.ins), w.strs(p.vars);
  w.num(p.ops), w.num(p.mem), w.num(p.lds), w.num(uint64_t(p.uops));
  w.strs(p.applied_opts);
  return std::move(w.out);
}

std::optional<ProgramSpec> decode_program(std::string_view bytes) {
  if (!bytes.starts_with(kMagic)) return std::nullopt;
  Reader r{bytes.substr(kMagic.size())};
  ProgramSpec p;
  p.name = r.str();
  p.kernel.name = r.str(), p.kernel.src = r.str(), p.kernel.entry_name = r.str();
  p.kernel.params.resize(r.count(30));
  for (KernelParam& k : p.kernel.params) {
    k.name = r.str(), k.slot = r.num<int64_t>();
    auto dt = r.num<uint8_t>(), as = r.num<uint8_t>();
    if (dt >= uint8_t(DTypeId::count) || as < uint8_t(AddrSpace::GLOBAL) || as > uint8_t(AddrSpace::ALU)) return std::nullopt;
    k.dtype = DType(DTypeId(dt)), k.addrspace = AddrSpace(as);
    k.writable = r.num<uint8_t>() != 0, k.is_volatile = r.num<uint8_t>() != 0;
    bool has_var = r.num<uint8_t>() != 0;
    std::string var = r.str();
    if (has_var) k.var_name = std::move(var);
    k.numel = r.num<int64_t>(), k.c_type = r.str();
  }
  for (int64_t& d : p.global) d = r.num<int64_t>();
  for (int64_t& d : p.local) d = r.num<int64_t>();
  p.outs = r.ints(), p.ins = r.ints(), p.vars = r.strs();
  p.ops = r.num<double>(), p.mem = r.num<double>(), p.lds = r.num<double>(), p.uops = size_t(r.num<uint64_t>());
  p.applied_opts = r.strs();
  if (!r.ok || !r.in.empty()) return std::nullopt;
  return p;
}

}  // namespace tg
