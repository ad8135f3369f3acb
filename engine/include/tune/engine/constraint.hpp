#pragma once
// Boolean constraints over parameter values, in the form Kernel Tuner and the
// T1 specs write them (Python-like: `and`, `or`, `not`, `//`, `%`, `**`,
// chained comparisons such as `32 <= a * b <= 1024`), evaluated by muParser.
// A factorization parameter `tile` exposes its parts as `tile_0`, `tile_1`, …

#include <memory>
#include <string>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

class constraint_set {
 public:
  virtual ~constraint_set() = default;
  /// True when the configuration satisfies every expression. Thread-safe.
  virtual bool satisfied(const configuration& config) const = 0;
  virtual const std::vector<std::string>& expressions() const = 0;
};

/// Compiles the expressions for the parameters of `space`. Throws
/// std::invalid_argument naming the expression and what is wrong with it
/// (unknown name, syntax error).
std::shared_ptr<constraint_set> make_constraint_set(const search_space& space, std::vector<std::string> expressions);

/// Rewrites one Python-style expression into muParser syntax (exposed for tests).
std::string to_muparser_syntax(const std::string& python_expression);

}  // namespace tune
