#pragma once
// the command-line programs' number options: the whole value must parse, else a tg::Error naming the option
#include <string>
#include <type_traits>

#include "tg/error.h"

template <class T> void parse_number(const std::string& option, const std::string& v, T& out) {
  size_t used = 0;
  try {
    if constexpr (std::is_floating_point_v<T>) out = T(std::stod(v, &used));
    else out = T(std::stoll(v, &used));
  } catch (const std::exception&) { used = 0; }
  if (used != v.size() || v.empty()) throw tg::Error("option " + option + ": '" + v + "' is not a number");
}
