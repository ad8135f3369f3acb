#include "list_expr.hpp"

#include <muParser.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include "python_expr.hpp"

namespace tune {
namespace {

using python::is_word;
using python::token;
using python::token_kind;
using tokens_t = std::vector<token>;
using values_t = std::vector<parameter_value>;

// A tuning parameter with more values than this is a mistake or a hostile
// file: refused before anything is allocated or iterated.
constexpr std::size_t max_values = 1'000'000;

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

bool is_op(const token& t, const char* op) { return t.kind == token_kind::op && t.text == op; }

/// Depth-0 positions in [begin, end) where `pred` holds.
template <class Pred>
std::vector<std::size_t> at_depth0(const tokens_t& tokens, std::size_t begin, std::size_t end, Pred pred) {
  std::vector<std::size_t> out;
  for (std::size_t i = begin; i < end; ++i) {
    if (is_op(tokens[i], "(") || is_op(tokens[i], "[")) {
      i = python::closing(tokens, i) - 1;
      continue;
    }
    if (pred(tokens[i])) out.push_back(i);
  }
  return out;
}

/// Evaluates an arithmetic expression, with `variable` bound when given.
class scalar {
 public:
  scalar(const tokens_t& tokens, std::size_t begin, std::size_t end, const std::string& variable = {})
      : parser_(python::make_parser()) {
    python::string_codes codes;
    std::string expression = python::to_muparser(tokens, begin, end, codes);
    if (!codes.empty()) bad("a string cannot take part in arithmetic");
    try {
      if (!variable.empty()) parser_->DefineVar(variable, &value_);
      parser_->SetExpr(expression);
    } catch (const mu::Parser::exception_type& e) {
      // e.g. a name longer than the parser takes: an error, not a crash.
      bad(e.GetMsg());
    }
  }
  double operator()(double value = 0) {
    value_ = value;
    try {
      double v = parser_->Eval();
      if (!std::isfinite(v)) bad("the value is not a finite number");
      return v;
    } catch (const mu::Parser::exception_type& e) {
      bad(e.GetMsg());
    } catch (const python::division_by_zero&) {
      bad("division by zero");
    }
  }

 private:
  std::unique_ptr<mu::Parser> parser_;
  double value_ = 0;
};

std::int64_t integer(double v, const char* what) {
  if (std::floor(v) != v) bad(std::string(what) + " must be an integer");
  // Beyond 2^53 a double no longer holds every integer (and beyond 2^63 the
  // conversion is undefined).
  if (std::fabs(v) > 9007199254740992.0) bad(std::string(what) + " is too large");
  return static_cast<std::int64_t>(v);
}

values_t list_value(const tokens_t& tokens, std::size_t begin, std::size_t end);

values_t range_call(const tokens_t& tokens, std::size_t open, std::size_t close) {
  // tokens[open] is "(", tokens[close - 1] is ")".
  auto commas = at_depth0(tokens, open + 1, close - 1, [](const token& t) { return is_op(t, ","); });
  if (commas.size() > 2) bad("range() takes one to three arguments");
  std::vector<std::int64_t> args;
  std::size_t from = open + 1;
  commas.push_back(close - 1);
  for (std::size_t c : commas) {
    if (from >= c) bad("range() lacks an argument");
    args.push_back(integer(scalar(tokens, from, c)(), "a range() argument"));
    from = c + 1;
  }
  std::int64_t start = 0, stop = 0, step = 1;
  if (args.size() == 1) {
    stop = args[0];
  } else {
    start = args[0];
    stop = args[1];
    if (args.size() == 3) step = args[2];
  }
  if (step == 0) bad("range() step must not be zero");
  // Its length, before any value is made (a range of 10^10 would take
  // gigabytes, or seconds in a comprehension that filters it).
  __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  __int128 length = span <= 0 ? 0
                              : (span + (step > 0 ? step : -static_cast<__int128>(step)) - 1) /
                                    (step > 0 ? step : -static_cast<__int128>(step));
  if (length > static_cast<__int128>(max_values))
    bad("range() would give more than " + std::to_string(max_values) + " values");
  values_t out;
  for (std::int64_t v = start; step > 0 ? v < stop : v > stop; v += step) {
    if (out.size() >= max_values) bad("the list has more than " + std::to_string(max_values) + " values");
    out.push_back(static_cast<double>(v));
  }
  return out;
}

values_t comprehension(const tokens_t& tokens, std::size_t begin, std::size_t end, std::size_t for_at) {
  // [expression for name in iterable (if condition)?]
  if (for_at == begin) bad("a comprehension lacks its expression before 'for'");
  if (for_at + 2 >= end || tokens[for_at + 1].kind != token_kind::name || !is_word(tokens[for_at + 2], "in"))
    bad("expected 'for NAME in …' in a comprehension");
  std::string variable = tokens[for_at + 1].text;
  auto ifs = at_depth0(tokens, for_at + 3, end, [](const token& t) { return is_word(t, "if"); });
  std::size_t iterable_end = ifs.empty() ? end : ifs.front();
  values_t domain = list_value(tokens, for_at + 3, iterable_end);
  scalar expression(tokens, begin, for_at, variable);
  std::optional<scalar> condition;
  if (!ifs.empty()) {
    if (ifs.front() + 1 >= end) bad("'if' lacks its condition");
    condition.emplace(tokens, ifs.front() + 1, end, variable);
  }
  values_t out;
  for (const auto& v : domain) {
    auto* d = std::get_if<double>(&v);
    if (!d) bad("a comprehension can only run over numbers");
    if (condition && (*condition)(*d) == 0) continue;
    out.push_back(expression(*d));
  }
  return out;
}

values_t list_term(const tokens_t& tokens, std::size_t begin, std::size_t end) {
  if (begin >= end) bad("a list is missing");
  const token& first = tokens[begin];
  if (is_op(first, "[") && python::closing(tokens, begin) == end) {
    auto fors = at_depth0(tokens, begin + 1, end - 1, [](const token& t) { return is_word(t, "for"); });
    if (!fors.empty()) return comprehension(tokens, begin + 1, end - 1, fors.front());
    values_t out;
    auto commas = at_depth0(tokens, begin + 1, end - 1, [](const token& t) { return is_op(t, ","); });
    std::size_t from = begin + 1;
    commas.push_back(end - 1);
    for (std::size_t k = 0; k < commas.size(); ++k) {
      std::size_t c = commas[k];
      if (from == c) {
        // "[]" and a trailing comma are fine, an empty element is not.
        if (c == end - 1 && (k == 0 || k + 1 == commas.size())) break;
        bad("an element of the list is empty");
      }
      if (c == from + 1 && tokens[from].kind == token_kind::string) {
        out.push_back(tokens[from].text);
      } else {
        out.push_back(scalar(tokens, from, c)());
      }
      from = c + 1;
    }
    return out;
  }
  if (is_op(first, "(") && python::closing(tokens, begin) == end) return list_value(tokens, begin + 1, end - 1);
  if ((is_word(first, "list") || is_word(first, "range")) && begin + 1 < end && is_op(tokens[begin + 1], "(") &&
      python::closing(tokens, begin + 1) == end) {
    if (is_word(first, "range")) return range_call(tokens, begin + 1, end);
    return list_value(tokens, begin + 2, end - 1);
  }
  bad("expected a list such as [1, 2, 4], list(range(…)), range(…) or a comprehension");
}

values_t list_value(const tokens_t& tokens, std::size_t begin, std::size_t end) {
  auto pluses = at_depth0(tokens, begin, end, [](const token& t) { return is_op(t, "+"); });
  values_t out;
  std::size_t from = begin;
  pluses.push_back(end);
  for (std::size_t p : pluses) {
    auto part = list_term(tokens, from, p);
    out.insert(out.end(), part.begin(), part.end());
    if (out.size() > max_values) bad("the list has more than " + std::to_string(max_values) + " values");
    from = p + 1;
  }
  return out;
}

}  // namespace

std::vector<parameter_value> evaluate_list_expression(const std::string& text) {
  auto tokens = python::tokenize(text);
  if (tokens.empty()) bad("the expression is empty");
  return list_value(tokens, 0, tokens.size());
}

}  // namespace tune
