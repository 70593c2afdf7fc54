#pragma once
// tg::TinyJit: tinygrad's TinyJit. It wraps a function from tensors to tensors. The first call runs the function
// normally; the second runs it again and records every launch its realizes make (program, argument buffers, variable
// values, launch size); every later call only replays those launches, with the new inputs' buffers swapped in: no
// graph building, scheduling or compiling.
//
//   tg::TinyJit step([&](const std::vector<tg::Tensor>& in) {   // returns a Tensor: step(...) returns one too
//     tg::Tensor loss = model(in[0]).sparse_categorical_crossentropy(in[1]);
//     opt.zero_grad(); loss.backward(); opt.step();             // assigns to weights: replayed every call
//     return loss;
//   });
//   for (auto& [x, y] : batches) float l = step(x, y).item<float>();
//
// The rules are tinygrad's:
// - The inputs are the tensors passed in; they are realized first. Between calls they may change their buffers and
//   values, not their count, shape, dtype, device or view of their buffer (a tg::Error names the input and what
//   changed). Two inputs may not share a buffer.
// - Everything else the function reads or assigns (weights, optimizer state, the random counter of Tensor::rand) is
//   the buffer the capture call used: assigns to it are replayed, so it updates in place every call (and rand keeps
//   advancing). Host values (C++ numbers, from_vector data) are baked in as they were at capture.
// - The returned tensors are realized inside the call. A replay returns the same tensors and overwrites their buffers,
//   so read or clone what must outlive the next call.
// - Reading tensor data (to_vector, item) inside the function while it is captured throws; so does calling a TinyJit
//   while another one captures.
// - A replay skips a kernel whose inputs nothing in the function writes (a weight's packed panels for a matmul) while
//   they are as it last read them: a write by tg (an assign, another TinyJit's replay) runs it again; memory of the
//   caller's (Tensor::from_blob) is read again every time.
// - JIT=0 (environment or tg::Context) runs the function on every call.
// - Symbolic shapes: the function may also take bound Variables (tg::sint), passed after the tensors. The kernels are
//   compiled for the Variables' ranges, so a replay runs them with the values bound now, with no capture per value:
//     tg::sint v = tg::Variable("pos", 1, 64);
//     tg::TinyJit step([&](const std::vector<tg::Tensor>& in, const std::vector<tg::sint>& vars) {
//       return cache.shrink({{0, vars[0]}, {0, 8}}).sum(0) + in[0]; });
//     for (int64_t n = 1; n < 64; n++) step({x}, {v.bind(n)});
//   A replay takes the same Variables (by name) as the capture; a missing or unbound one is a tg::Error.
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "tg/tensor.h"

namespace tg {

// the untyped core: a function returning a list of tensors
class TinyJitBase {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const std::vector<sint>&)>;
  explicit TinyJitBase(Fn fn);
  ~TinyJitBase();
  TinyJitBase(TinyJitBase&&) noexcept;
  TinyJitBase& operator=(TinyJitBase&&) noexcept;

  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const std::vector<sint>& vars = {});
  int64_t calls() const;             // calls so far that returned (capture happens on the second)
  bool is_captured() const;          // later calls replay
  size_t captured_launches() const;  // kernels and copies one replay runs
  void reset();                      // forget the capture: the next call runs normally, the one after captures again

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// R is Tensor (one output) or std::vector<Tensor>; deduced from the function: tg::TinyJit f([](const auto& in) {...});
template <class R = std::vector<Tensor>> class TinyJit : public TinyJitBase {
  static_assert(std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>>, "a TinyJit function returns Tensor or std::vector<Tensor>");

 public:
  template <class F> requires(std::is_invocable_r_v<R, F&, const std::vector<Tensor>&> ||
                               std::is_invocable_r_v<R, F&, const std::vector<Tensor>&, const std::vector<sint>&>)
  explicit TinyJit(F fn) : TinyJitBase(adapt(std::move(fn))) {}

  R operator()(const std::vector<Tensor>& inputs, const std::vector<sint>& vars = {}) {
    if constexpr (std::is_same_v<R, Tensor>) return call(inputs, vars).at(0);
    else return call(inputs, vars);
  }
  template <class... T> requires(sizeof...(T) > 0 && (std::is_same_v<std::remove_cvref_t<T>, Tensor> && ...))
  R operator()(const T&... inputs) { return (*this)(std::vector<Tensor>{inputs...}); }

 private:
  template <class F> static Fn adapt(F fn) {
    return [fn = std::move(fn)](const std::vector<Tensor>& in, const std::vector<sint>& vars) mutable -> std::vector<Tensor> {
      auto run = [&] {
        if constexpr (std::is_invocable_v<F&, const std::vector<Tensor>&, const std::vector<sint>&>) return fn(in, vars);
        else return fn(in);
      };
      if constexpr (std::is_same_v<R, Tensor>) return std::vector<Tensor>{run()};
      else return run();
    };
  }
};

template <class F> struct jit_result { using type = std::remove_cvref_t<std::invoke_result_t<F&, const std::vector<Tensor>&>>; };
template <class F> requires std::is_invocable_v<F&, const std::vector<Tensor>&, const std::vector<sint>&>
struct jit_result<F> { using type = std::remove_cvref_t<std::invoke_result_t<F&, const std::vector<Tensor>&, const std::vector<sint>&>>; };
template <class F> TinyJit(F) -> TinyJit<typename jit_result<F>::type>;

}  // namespace tg
