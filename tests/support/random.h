#pragma once
// seeded uniform random floats in [lo, hi): the tests' inputs, the same on every run and machine with one libstdc++
#include <cstdint>
#include <random>
#include <vector>

namespace tg::test {
inline std::vector<float> randv(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
}  // namespace tg::test
