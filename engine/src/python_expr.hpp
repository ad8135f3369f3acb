#pragma once
// The small part of Python that search-space files use in constraints and
// value lists, mapped onto muParser: a tokenizer, a rewrite of boolean
// structure (`and`, `or`, `not`, chained comparisons) and operators (`**`,
// `//`, `%`) into muParser syntax, and a parser factory with Python's `%` and
// `//` defined. Arithmetic itself is left to muParser.

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mu {
class Parser;
}

namespace tune::python {

enum class token_kind { number, name, string, op };

struct token {
  token_kind kind;
  std::string text;  // for strings: the contents without quotes
};

/// Whether the token is the name `word` (a keyword such as `and`, `for`).
inline bool is_word(const token& t, const char* word) { return t.kind == token_kind::name && t.text == word; }

/// Splits an expression into tokens; throws std::invalid_argument on a
/// character Python expressions of this kind never contain.
std::vector<token> tokenize(const std::string& text);

/// Numeric codes for string literals: a categorical parameter with string
/// values takes the code of its value, a literal in an expression the code of
/// its text, so `==` and `!=` compare strings.
using string_codes = std::map<std::string, double>;

/// Rewrites tokens[begin, end) of a boolean or arithmetic expression into
/// muParser syntax. String literals are looked up in (and added to) `codes`.
std::string to_muparser(const std::vector<token>& tokens, std::size_t begin, std::size_t end, string_codes& codes);

/// A muParser parser with Python's `%` (floor modulo) and `//` (floor
/// division), both failing on a zero divisor, plus `int()` and `float()`.
std::unique_ptr<mu::Parser> make_parser();

/// Index one past the bracket that closes the one at tokens[open].
std::size_t closing(const std::vector<token>& tokens, std::size_t open);

/// Thrown by `%` and `//` on a zero divisor (Python raises there).
struct division_by_zero {};

}  // namespace tune::python
