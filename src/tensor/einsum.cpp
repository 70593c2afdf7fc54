// The two string-formula ops (tinygrad's OpMixin.einsum and MovementMixin.rearrange): einsum aligns every operand to
// one sorted alphabet, multiplies and sums what the output drops; rearrange is einops' unflatten -> permute -> flatten.
#include <algorithm>
#include <map>
#include <set>

#include "tensor/tensor_impl.h"
#include "uop/movement.h"

namespace tg {

namespace {
std::vector<std::string> split_str(const std::string& s, const std::string& sep) {
  std::vector<std::string> r;
  size_t at = 0;
  for (size_t p; (p = s.find(sep, at)) != std::string::npos; at = p + sep.size()) r.push_back(s.substr(at, p - at));
  r.push_back(s.substr(at));
  return r;
}
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// the letters that occur once in s, sorted (the implicit output)
std::string once(const std::string& s) {
  std::string r;
  for (char c : s) if (is_letter(c) && std::ranges::count(s, c) == 1) r += c;
  std::ranges::sort(r);
  return r;
}
}  // namespace

// ***** 1. einsum *****

Tensor Tensor::einsum(const std::string& formula_in, const std::vector<Tensor>& operands, std::optional<DType> dtype) {
  std::string formula;
  for (char c : formula_in) if (c != ' ') formula += c;
  auto bad = [&](const std::string& why) { return Error("einsum: " + why + " in \"" + formula_in + "\""); };
  std::vector<std::string> sides = split_str(formula, "->");
  if (sides.size() > 2) throw bad("more than one \"->\"");
  std::vector<std::string> inputs = split_str(sides[0], ",");
  if (inputs.size() != operands.size())
    throw bad(std::to_string(inputs.size()) + " operands in the formula, " + std::to_string(operands.size()) + " given");
  std::optional<std::string> rhs = sides.size() == 2 ? std::optional(sides[1]) : std::nullopt;
  for (auto& s : sides) {
    std::string rest = s;
    for (size_t p; (p = rest.find("...")) != std::string::npos;) rest.erase(p, 3);
    for (char c : rest) if (!is_letter(c) && c != ',') throw bad(std::string("invalid subscript '") + c + "'");
  }
  // the ellipsis becomes letters the formula does not use, right-aligned across operands as broadcasting is
  if (formula.find("...") != std::string::npos) {
    std::string ell;
    for (char c = 'a'; c <= 'z'; c++) if (formula.find(c) == std::string::npos) ell += c;
    for (char c = 'A'; c <= 'Z'; c++) if (formula.find(c) == std::string::npos) ell += c;
    std::vector<int64_t> ell_n;
    for (size_t i = 0; i < inputs.size(); i++) {
      size_t p = inputs[i].find("...");
      if (p != std::string::npos && inputs[i].find("...", p + 1) != std::string::npos) throw bad("more than one ellipsis in an operand");
      ell_n.push_back(p == std::string::npos ? 0 : std::max<int64_t>(0, operands[i].ndim() - int64_t(inputs[i].size()) + 3));
    }
    int64_t mx = std::ranges::max(ell_n);
    if (mx > int64_t(ell.size())) throw bad("too many dims under the ellipsis");
    std::string auto_out = once(sides[0]);
    std::erase_if(auto_out, [&](char c) { return ell.find(c) != std::string::npos; });
    for (size_t i = 0; i < inputs.size(); i++)
      if (size_t p = inputs[i].find("..."); p != std::string::npos) inputs[i].replace(p, 3, ell.substr(size_t(mx - ell_n[i]), size_t(ell_n[i])));
    if (rhs) {
      if (size_t p = rhs->find("..."); p != std::string::npos) rhs->replace(p, 3, ell.substr(0, size_t(mx)));
    } else rhs = ell.substr(0, size_t(mx)) + auto_out;
  }
  if (!rhs) {
    std::string all;
    for (auto& s : inputs) all += s;
    rhs = once(all);
  }
  std::vector<Tensor> xs = operands;
  // a letter repeated in one operand: its diagonal
  for (size_t i = 0; i < inputs.size(); i++) {
    std::string& s = inputs[i];
    Tensor& x = xs[i];
    if (int64_t(s.size()) != x.ndim())
      throw bad("operand " + std::to_string(i) + " has subscripts \"" + s + "\" for shape " + x.shape_str());
    for (;;) {
      size_t j = 0, k = std::string::npos;
      for (; j < s.size() && (k = s.find(s[j], j + 1)) == std::string::npos; j++) {}
      if (k == std::string::npos) break;
      int64_t n = x.shape()[j];
      if (x.shape()[k] != n) throw bad(std::string("repeated subscript '") + s[j] + "' has sizes " + x.shape_str());
      std::vector<int64_t> perm;
      std::string ns;
      for (size_t d = 0; d < s.size(); d++) if (d != j && d != k) perm.push_back(int64_t(d)), ns += s[d];
      perm.push_back(int64_t(j)), perm.push_back(int64_t(k));
      // the n x n block flattened and padded to n x (n+1): its first column is the diagonal
      std::vector<std::pair<int64_t, int64_t>> pads(size_t(x.ndim() - 1), {0, 0});
      pads.back() = {0, n};
      x = x.permute(perm).flatten(-2).pad(pads).unflatten(-1, {n, n + 1})[{Ellipsis{}, int64_t(0)}];
      s = ns + s[j];
    }
  }
  std::map<char, int64_t> sz;
  for (size_t i = 0; i < inputs.size(); i++)
    for (size_t d = 0; d < inputs[i].size(); d++) {
      int64_t n = xs[i].shape()[d];
      auto [it, fresh] = sz.emplace(inputs[i][d], n);
      if (!fresh && it->second != n && n != 1 && it->second != 1)
        throw bad(std::string("subscript '") + inputs[i][d] + "' has sizes " + std::to_string(it->second) + " and " + std::to_string(n));
      if (it->second == 1) it->second = n;
    }
  std::set<char> seen;
  for (char c : *rhs) {
    if (!sz.count(c)) throw bad(std::string("output subscript '") + c + "' is not in any input");
    if (!seen.insert(c).second) throw bad(std::string("output subscript '") + c + "' repeats");
  }
  // every operand laid out over the sorted alphabet (size 1 where it lacks a letter), multiplied, summed
  std::string alpha;
  for (auto& [c, n] : sz) alpha += c;
  Tensor prod;
  for (size_t i = 0; i < xs.size(); i++) {
    std::string sorted = inputs[i];
    std::ranges::sort(sorted);
    std::vector<int64_t> perm;
    for (char c : sorted) perm.push_back(int64_t(inputs[i].find(c)));
    Shape shape;
    for (char c : alpha) shape.push_back(inputs[i].find(c) == std::string::npos ? 1 : xs[i].shape()[inputs[i].find(c)]);
    Tensor x = inputs[i].empty() ? xs[i] : xs[i].permute(perm).reshape(shape);
    prod = i == 0 ? x : prod * x;
  }
  std::vector<int64_t> reduce;
  for (size_t d = 0; d < alpha.size(); d++) if (rhs->find(alpha[d]) == std::string::npos) reduce.push_back(int64_t(d));
  Tensor ret = prod.sum(reduce, false, dtype);
  std::string kept;
  for (char c : alpha) if (rhs->find(c) != std::string::npos) kept += c;
  std::vector<int64_t> perm;
  for (char c : *rhs) perm.push_back(int64_t(kept.find(c)));
  return ret.permute(perm);
}

// ***** 2. rearrange *****

namespace {
struct Side {
  std::vector<std::string> names;
  std::vector<std::pair<size_t, size_t>> groups;  // [start, end) into names
};
Side parse_side(const std::string& s, const std::string& formula) {
  Side r;
  std::optional<size_t> open;
  std::string tok;
  auto flush = [&] {
    if (tok == "1") {  // an anonymous unit axis: an empty group
      r.groups.push_back({r.names.size(), r.names.size()});
    } else if (!tok.empty()) {
      bool ok = tok == "..." || tok == "…";
      if (!ok) {
        ok = !std::isdigit(uint8_t(tok[0])) && tok.front() != '_' && tok.back() != '_';
        for (char c : tok) ok = ok && (std::isalnum(uint8_t(c)) || c == '_');
      }
      if (!ok) throw Error("rearrange: invalid axis name \"" + tok + "\" in \"" + formula + "\"");
      r.names.push_back(tok == "…" ? "..." : tok);
    }
    tok.clear();
  };
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    if (c == '(' || c == ')' || c == ' ') {
      flush();
      if (c == '(') {
        if (open) throw Error("rearrange: nested brackets in \"" + formula + "\"");
        open = r.names.size();
      } else if (c == ')') {
        if (!open) throw Error("rearrange: bracket mismatch in \"" + formula + "\"");
        r.groups.push_back({*open, r.names.size()}), open.reset();
      }
    } else tok += c;
  }
  flush();
  if (open) throw Error("rearrange: bracket mismatch in \"" + formula + "\"");
  return r;
}
}  // namespace

Tensor Tensor::rearrange(const std::string& formula, const std::vector<std::pair<std::string, int64_t>>& sizes) const {
  std::vector<std::string> sides = split_str(formula, "->");
  if (sides.size() != 2) throw Error("rearrange: need exactly one \"->\" in \"" + formula + "\"");
  Side lhs = parse_side(sides[0], formula), rhs = parse_side(sides[1], formula);
  for (auto& [name, n] : sizes)
    if (std::ranges::find(lhs.names, name) == lhs.names.end()) throw Error("rearrange: axis " + name + " is not used in \"" + formula + "\"");
  auto sorted = [](std::vector<std::string> v) { std::ranges::sort(v); return v; };
  std::vector<std::string> sl = sorted(lhs.names);
  if (sl != sorted(rhs.names) || std::ranges::adjacent_find(sl) != sl.end()) throw Error("rearrange: name mismatch in \"" + formula + "\"");
  for (auto& [s, e] : lhs.groups)
    for (size_t i = s; i < e; i++)
      if (lhs.names[i] == "...") throw Error("rearrange: cannot have a collapsed ellipsis (...) on the left of \"" + formula + "\"");
  int64_t grouped = 0;
  for (auto& [s, e] : lhs.groups) grouped += int64_t(e) - int64_t(s) - 1;
  bool ell = std::ranges::find(lhs.names, "...") != lhs.names.end();
  int64_t want = int64_t(lhs.names.size()) - grouped - (ell ? 1 : 0);
  if (ell ? want > ndim() : want != ndim())
    throw Error("rearrange: \"" + sides[0] + "\" names " + std::to_string(want) + " dims, the tensor has shape " + shape_str());
  if (ell) {  // "..." becomes ...0, ...1, ...: groups after it shift
    int64_t n = ndim() - want;
    auto expand = [&](Side& side) {
      auto it = std::ranges::find(side.names, "...");
      if (it == side.names.end()) return;
      size_t at = size_t(it - side.names.begin());
      side.names.erase(it);
      for (int64_t j = n; j-- > 0;) side.names.insert(side.names.begin() + int64_t(at), "..." + std::to_string(j));
      for (auto& [s, e] : side.groups) {
        if (s > at) s += size_t(n) - 1;
        if (e > at) e += size_t(n) - 1;
      }
    };
    expand(lhs), expand(rhs);
  }
  auto size_of = [&](const std::string& name) {
    for (auto& [k, v] : sizes) if (k == name) return v;
    return int64_t(-1);
  };
  Tensor t = *this;
  for (auto& [s, e] : lhs.groups) {
    Shape sh;
    for (size_t i = s; i < e; i++) sh.push_back(size_of(lhs.names[i]));
    t = t.unflatten(int64_t(s), sh);
  }
  for (size_t i = 0; i < lhs.names.size(); i++)
    if (int64_t n = size_of(lhs.names[i]); n != -1 && n != t.shape()[i])
      throw Error("rearrange: size " + std::to_string(n) + " given for axis " + lhs.names[i] + " of size " + std::to_string(t.shape()[i]));
  std::vector<int64_t> perm;
  for (auto& name : rhs.names) perm.push_back(int64_t(std::ranges::find(lhs.names, name) - lhs.names.begin()));
  t = t.permute(perm);
  for (auto it = rhs.groups.rbegin(); it != rhs.groups.rend(); ++it)
    t = it->first < it->second ? t.flatten(int64_t(it->first), int64_t(it->second) - 1) : t.unsqueeze(int64_t(it->first));
  return t;
}

}  // namespace tg
