#pragma once
// tg::custom_kernel: tinygrad's Tensor.custom_kernel. A kernel written by hand as a UOp graph: the kernel function gets
// one KernelUOp per buffer passed (outputs and inputs alike, in order: placeholders with the buffers' shapes and dtypes)
// and returns the kernel's SINK. custom_kernel puts it into the graph as one CALL of the buffers, scheduled as exactly
// one kernel, and returns every buffer as it is after the kernel ran (the outputs are the ones it stores to).
//
//   auto add = [](const tg::KernelArgs& b) {                  // c = a + y, over the flat elements
//     auto [c, a, y] = b.take<3>();
//     tg::KernelUOp i = tg::KernelUOp::range(c.numel(), 0);
//     return c.flatten()[{i}].store(a.flatten()[{i}] + y.flatten()[{i}]).end({i}).sink("custom_add");
//   };
//   tg::Tensor c = tg::custom_kernel({tg::Tensor::empty({4, 4}), a, y}, add)[0];
//
// A reduction keeps its running value in a buffer (a global output or a register, KernelUOp::reg) with set(): the
// store, the END of the ranges it closes, and an AFTER ordering later reads behind it, as tinygrad writes them:
//
//   tg::KernelUOp acc = out[{0}].set(0.0);                            // out[0] = 0
//   acc = acc[{0}].set(acc.after({r})[{0}] + x[{r}], {r});            // for r: out[0] = out[0] + x[r]
//   return acc.sink("custom_sum", false);
//
// Inputs that are not plain buffers (a + 1, a view) are realized first. Gradients flow only through grad_fxn (as in
// tinygrad): it gets the gradient of the one output that has one and the buffers, and returns a gradient per buffer.
// Every mistake found while building (an index out of a buffer's range, a wrong number of indices or buffers, a kernel
// that leaves a range open or returns no SINK) is a tg::Error naming it.
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tg/dtype.h"
#include "tg/tensor.h"

namespace tg {

// one node of a kernel graph (an immutable, shared UOp). A C++ number converts to a weak literal, as in tinygrad
class KernelUOp {
 public:
  template <class T> requires std::is_arithmetic_v<T>
  KernelUOp(T v) : KernelUOp(literal(std::is_same_v<T, bool> ? ConstVal(bool(v)) : std::is_floating_point_v<T> ? ConstVal(double(v)) : ConstVal(int64_t(v)))) {}
  static KernelUOp const_(ConstVal v, DType dtype);
  // a loop index 0..end-1 with an axis id unique in the kernel; reduce: the axis a value is accumulated over
  static KernelUOp range(int64_t end, int64_t axis_id, bool reduce = false);
  // a private register array of `size` elements (tinygrad's placeholder in AddrSpace.REG); slot numbers them
  static KernelUOp reg(int64_t size, DType dtype, int64_t slot);
  static KernelUOp group(const std::vector<KernelUOp>& stores);  // several stores as one
  // the kernel's root: KernelInfo(name); apply_opts false keeps the optimizer off it (opts_to_apply=())
  static KernelUOp sink(const std::vector<KernelUOp>& srcs, const std::string& name, bool apply_opts = true);
  KernelUOp sink(const std::string& name, bool apply_opts = true) const { return sink({*this}, name, apply_opts); }

  // ** buffers: one index per dim, each checked against the dim's size by its value range **
  KernelUOp operator[](std::initializer_list<KernelUOp> idx) const;
  KernelUOp index(const std::vector<KernelUOp>& idx) const;
  KernelUOp store(const KernelUOp& value) const;  // this is an indexed buffer
  // store, end the given ranges, and the buffer after that: what later reads of the buffer must index
  KernelUOp set(const KernelUOp& value, const std::vector<KernelUOp>& end = {}) const;
  KernelUOp end(const std::vector<KernelUOp>& ranges) const;
  KernelUOp after(const std::vector<KernelUOp>& deps) const;
  KernelUOp reshape(const Shape& shape) const;
  KernelUOp flatten() const;
  KernelUOp permute(const std::vector<int64_t>& order) const;

  // ** values **
  KernelUOp cast(DType dt) const;
  KernelUOp where(const KernelUOp& a, const KernelUOp& b) const;
  KernelUOp eq(const KernelUOp& x) const;
  KernelUOp ne(const KernelUOp& x) const;
  KernelUOp maximum(const KernelUOp& x) const;
  KernelUOp sqrt() const;
  KernelUOp exp2() const;
  KernelUOp log2() const;
  KernelUOp reciprocal() const;

  Shape shape() const;  // a buffer's or view's shape; tg::Error for a node without one
  int64_t numel() const;
  DType dtype() const;
  std::string str() const;  // the graph, printed as tinygrad prints a UOp

 private:
  struct Impl;
  friend struct KernelAccess;
  explicit KernelUOp(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  static KernelUOp literal(ConstVal v);
  std::shared_ptr<const Impl> impl_;
};

KernelUOp operator+(const KernelUOp& a, const KernelUOp& b);
KernelUOp operator-(const KernelUOp& a, const KernelUOp& b);
KernelUOp operator*(const KernelUOp& a, const KernelUOp& b);
KernelUOp operator/(const KernelUOp& a, const KernelUOp& b);  // true division on floats, floor division on ints
KernelUOp operator%(const KernelUOp& a, const KernelUOp& b);
KernelUOp operator<(const KernelUOp& a, const KernelUOp& b);
KernelUOp operator&(const KernelUOp& a, const KernelUOp& b);
KernelUOp operator|(const KernelUOp& a, const KernelUOp& b);
KernelUOp operator-(const KernelUOp& a);

// the kernel function's buffers; reading one past the end is a tg::Error, and take<N>() checks the count
class KernelArgs {
 public:
  explicit KernelArgs(std::vector<KernelUOp> bufs) : bufs_(std::move(bufs)) {}
  const KernelUOp& operator[](size_t i) const;
  size_t size() const { return bufs_.size(); }
  template <size_t N> std::array<KernelUOp, N> take() const {
    check_count(N);
    return [&]<size_t... I>(std::index_sequence<I...>) { return std::array<KernelUOp, N>{bufs_[I]...}; }(std::make_index_sequence<N>());
  }

 private:
  void check_count(size_t n) const;
  std::vector<KernelUOp> bufs_;
};

using KernelFxn = std::function<KernelUOp(const KernelArgs& bufs)>;
// bufs: the kernel's buffers in slot order, all on one device. grad_fxn as Tensor::call's: the output's gradient and
// the buffers -> one gradient per buffer (nullopt where there is none)
std::vector<Tensor> custom_kernel(const std::vector<Tensor>& bufs, const KernelFxn& fxn, Tensor::CallGradFxn grad_fxn = {});

}  // namespace tg
