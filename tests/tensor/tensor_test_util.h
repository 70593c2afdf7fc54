#pragma once
// Helpers shared by the Tensor test files.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

#include "tg/error.h"

namespace tg::testutil {

// BUFFER slots come from a global counter: renumber them 0, 1, ... in order of first appearance
inline std::string normalize_slots(const std::string& s) {
  static const std::regex re(R"(Ops\.BUFFER, (dtypes\.\w+), arg=ParamArg\((-?\d+),)");
  std::map<std::string, int> ids;
  std::string out;
  auto it = std::sregex_iterator(s.begin(), s.end(), re);
  size_t last = 0;
  for (; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += s.substr(last, m.position() - last);
    auto [e, fresh] = ids.try_emplace(m[2].str(), int(ids.size()));
    out += "Ops.BUFFER, " + m[1].str() + ", arg=ParamArg(" + std::to_string(e->second) + ",";
    last = m.position() + m.length();
  }
  return out + s.substr(last);
}

template <class F> std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<not a tg::Error: ") + e.what() + ">";
  }
  return "<no throw>";
}
// every part appears in the message
inline void expect_has(const std::string& msg, std::initializer_list<std::string> parts) {
  for (auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

}  // namespace tg::testutil
