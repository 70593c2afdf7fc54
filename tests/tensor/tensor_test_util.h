#pragma once
// Helpers shared by the Tensor test files.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <vector>
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

// every case's graph, shape and dtype built by its C++ builder equals tinygrad's printed ones; prints the tally
template <class Cases, class Builders> void expect_graphs_match(const char* what, const Cases& cases, const Builders& b) {
  int matched = 0;
  std::vector<std::string> failed;
  for (auto& c : cases) {
    SCOPED_TRACE("case " + c.name + ": " + c.expr);
    auto it = b.find(c.name);
    if (it == b.end()) { ADD_FAILURE() << "no C++ builder for case " << c.name; continue; }
    std::string got, shape, dtype;
    try {
      auto t = it->second();
      got = normalize_slots(t.graph()), shape = t.shape_str();
      std::ostringstream os;
      os << t.dtype();
      dtype = os.str();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
      failed.push_back(c.name);
      continue;
    }
    EXPECT_EQ(shape, c.shape);
    EXPECT_EQ(dtype, c.dtype);
    EXPECT_EQ(got, normalize_slots(c.str));
    if (got == normalize_slots(c.str) && shape == c.shape && dtype == c.dtype) matched++;
    else failed.push_back(c.name);
  }
  std::string f;
  for (auto& n : failed) f += " " + n;
  std::printf("%s: %d of %zu equal tinygrad's%s%s\n", what, matched, cases.size(), failed.empty() ? "" : "; differ:", f.c_str());
  EXPECT_EQ(b.size(), cases.size()) << "every builder has a case in the data file";
}

}  // namespace tg::testutil
