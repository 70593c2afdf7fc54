#pragma once
// Helpers shared by the UOp test files.
#include <gtest/gtest.h>

#include <string>

#include "tg/error.h"
#include "uop/uop.h"

namespace tg::testutil {

// UOps compare by pointer; on failure show both graphs (gtest's own printer would show raw bytes)
inline ::testing::AssertionResult SameUOp(const char* ae, const char* be, const UOp& a, const UOp& b) {
  if (a == b) return ::testing::AssertionSuccess();
  auto show = [](const UOp& u) { return u ? u.str() : std::string("UOp()"); };
  return ::testing::AssertionFailure() << ae << " != " << be << "\n" << ae << ":\n" << show(a) << "\n" << be << ":\n" << show(b);
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
}  // namespace tg::testutil

#define EXPECT_UOP_EQ(a, b) EXPECT_PRED_FORMAT2(::tg::testutil::SameUOp, a, b)
