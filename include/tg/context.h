#pragma once
// tg::Context: tinygrad's `with Context(TRAINING=1):` as a C++ scope. While a Context lives, the variables it names
// read as its values wherever the library reads its settings (TRAINING, DEBUG, NOOPT, BEAM, JIT, ...); nested Contexts
// stack, and leaving the scope restores what was there before. The library reads its own knobs from the environment
// once (as tinygrad does) and again when a Context naming one is entered or left: a setenv() in between is not seen.
//
//   { tg::Context train({{"TRAINING", 1}}); loss.backward(); opt.step(); }
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace tg {

class Context {
 public:
  Context(std::initializer_list<std::pair<std::string, int64_t>> values);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  size_t depth_;
};

// the value of a setting: the innermost Context that names it, else the environment variable, else def
int64_t context_value(const std::string& name, int64_t def);
// tinygrad's TRAINING: dropout, BatchNorm's batch statistics and Optimizer::step depend on it
inline bool training() { return context_value("TRAINING", 0) != 0; }

}  // namespace tg
