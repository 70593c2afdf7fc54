#pragma once
// tg::sint: tinygrad's sint, an int or a symbolic integer built from Variables. A Variable has a name and a range;
// bound to a value it stands in shapes (reshape/shrink/pad/expand, Tensor::empty) and in tensor math, and the kernels
// it reaches are compiled once for the range: the value is a kernel argument.
//
//   tg::sint v = tg::Variable("start_pos", 1, 1024);
//   tg::Tensor k = cache.shrink({{0, v.bind(n)}, {0, 64}});   // shape (start_pos, 64); its kernels serve every n
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tg {

struct UOpNode;

class sint {
 public:
  sint() = default;
  template <class T> requires(std::is_integral_v<T> && !std::is_same_v<T, bool>)
  sint(T v) : v_(int64_t(v)) {}
  explicit sint(const UOpNode* node);  // internal: a weakint UOp (a CONST becomes the int)
  sint(const sint& o);
  sint(sint&& o) noexcept : v_(o.v_), n_(o.n_) { o.n_ = nullptr; }
  sint& operator=(sint o) noexcept { std::swap(v_, o.v_), std::swap(n_, o.n_); return *this; }
  ~sint();

  bool is_int() const { return n_ == nullptr; }
  int64_t as_int() const;   // the int; tg::Error naming the expression when it is symbolic
  int64_t vmin() const;     // the range the value lies in
  int64_t vmax() const;
  std::string render() const;  // "3", "start_pos", "(start_pos+1)"
  bool is_variable() const;    // a Variable, unbound
  bool is_bound() const;       // a bound Variable
  std::string name() const;    // a Variable's name (bound or not)
  sint bind(int64_t val) const;             // tg::Error where this is no Variable or val is out of its range
  std::pair<sint, int64_t> unbind() const;  // a bound Variable: (the Variable, its value)
  const UOpNode* node() const { return n_; }  // internal

 private:
  int64_t v_ = 0;
  const UOpNode* n_ = nullptr;
};

// tinygrad's Variable(name, min, max): a symbolic int in [min_val, max_val]
sint Variable(const std::string& name, int64_t min_val, int64_t max_val);

// arithmetic as on Python ints: / is floor division (tinygrad's //), % floor modulo
sint operator+(const sint& a, const sint& b);
sint operator-(const sint& a, const sint& b);
sint operator*(const sint& a, const sint& b);
sint operator/(const sint& a, const sint& b);
sint operator%(const sint& a, const sint& b);
sint operator-(const sint& a);
sint smax(const sint& a, const sint& b);
sint smin(const sint& a, const sint& b);
// comparisons build a symbolic bool (as tinygrad's UOp comparisons); resolve() decides it where its bounds do
sint operator<(const sint& a, const sint& b);
sint operator>(const sint& a, const sint& b);
sint operator<=(const sint& a, const sint& b);
sint operator>=(const sint& a, const sint& b);
sint sym_eq(const sint& a, const sint& b);
sint sym_ne(const sint& a, const sint& b);
// the truth of a symbolic bool (or int != 0) where its bounds decide it, else `otherwise` (tinygrad's resolve)
bool resolve(const sint& x, bool otherwise = true);
// the same expression (structural; two binds of one Variable to different values differ)
bool operator==(const sint& a, const sint& b);
inline bool operator!=(const sint& a, const sint& b) { return !(a == b); }
// the value with every Variable set: bound ones to their value, others from vals (name -> value); tg::Error if one is missing
int64_t sym_infer(const sint& x, const std::vector<std::pair<std::string, int64_t>>& vals = {});

// a shape whose dims may be symbolic; converts from a Shape (std::vector<int64_t>) and from a braced list of ints/sints
struct SymShape : std::vector<sint> {
  using std::vector<sint>::vector;
  SymShape() = default;
  SymShape(const std::vector<int64_t>& s) : std::vector<sint>(s.begin(), s.end()) {}
  SymShape(std::vector<sint> s) : std::vector<sint>(std::move(s)) {}
  std::optional<std::vector<int64_t>> ints() const;  // every dim as an int, where none is symbolic
  std::string str() const;                           // "(3, start_pos)"
};
// (start, end) or (before, after) pairs for shrink/pad; from a vector of int pairs or a braced list of ints/sints
struct SymPairs : std::vector<std::pair<sint, sint>> {
  using std::vector<std::pair<sint, sint>>::vector;
  SymPairs() = default;
  SymPairs(const std::vector<std::pair<int64_t, int64_t>>& p) {
    for (auto& [a, b] : p) emplace_back(a, b);
  }
  std::optional<std::vector<std::pair<int64_t, int64_t>>> ints() const;
};

}  // namespace tg
