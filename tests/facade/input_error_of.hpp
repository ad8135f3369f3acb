#pragma once
// The message of the input_error a call throws, or `none` when it throws none:
// for the facade's tests of what bad options are told.
#include <string>
#include <utility>

#include "tune/tune.hpp"

namespace tune::test {
template <class Call>
std::string input_error_of(Call&& call, std::string none) {
  try {
    std::forward<Call>(call)();
  } catch (const input_error& e) {
    return e.what();
  }
  return none;
}
}  // namespace tune::test
