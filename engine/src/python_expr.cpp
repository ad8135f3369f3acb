#include "python_expr.hpp"

#include <muParser.h>

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace tune::python {
namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

bool is_open(const token& t) { return t.kind == token_kind::op && (t.text == "(" || t.text == "["); }
bool is_close(const token& t) { return t.kind == token_kind::op && (t.text == ")" || t.text == "]"); }
bool is_comparison(const token& t) {
  return t.kind == token_kind::op &&
         (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=");
}

/// Positions of depth-0 tokens in [begin, end) for which `pred` holds.
template <class Pred>
std::vector<std::size_t> split_points(const std::vector<token>& tokens, std::size_t begin, std::size_t end, Pred pred) {
  std::vector<std::size_t> out;
  for (std::size_t i = begin; i < end; ++i) {
    if (is_open(tokens[i])) {
      i = closing(tokens, i) - 1;
      continue;
    }
    if (pred(tokens[i])) out.push_back(i);
  }
  return out;
}

std::string text_of(const std::vector<token>& tokens, std::size_t begin, std::size_t end) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) {
    if (!out.empty()) out += ' ';
    out += tokens[i].kind == token_kind::string ? "'" + tokens[i].text + "'" : tokens[i].text;
  }
  return out;
}

double string_code(const std::string& text, string_codes& codes) {
  auto it = codes.find(text);
  if (it != codes.end()) return it->second;
  // Far from any number a search space uses, distinct per string.
  double code = -1.0e15 - static_cast<double>(codes.size());
  codes.emplace(text, code);
  return code;
}

std::string arithmetic(const std::vector<token>& tokens, std::size_t begin, std::size_t end, string_codes& codes);

/// Comma-separated expressions (function arguments) inside brackets.
std::string argument_list(const std::vector<token>& tokens, std::size_t begin, std::size_t end, string_codes& codes) {
  auto commas =
      split_points(tokens, begin, end, [](const token& t) { return t.kind == token_kind::op && t.text == ","; });
  std::string out;
  std::size_t from = begin;
  commas.push_back(end);
  for (std::size_t c : commas) {
    if (!out.empty()) out += ",";
    out += to_muparser(tokens, from, c, codes);
    from = c + 1;
  }
  return out;
}

std::string arithmetic(const std::vector<token>& tokens, std::size_t begin, std::size_t end, string_codes& codes) {
  std::string out;
  for (std::size_t i = begin; i < end; ++i) {
    const token& t = tokens[i];
    switch (t.kind) {
      case token_kind::number:
        out += t.text;
        break;
      case token_kind::string:
        out += "(" + std::to_string(string_code(t.text, codes)) + ")";
        break;
      case token_kind::name:
        if (t.text == "True") {
          out += "1";
        } else if (t.text == "False") {
          out += "0";
        } else if (t.text == "and" || t.text == "or" || t.text == "not") {
          bad("'" + t.text + "' cannot stand here; put the operand in parentheses");
        } else if (t.text == "in" || t.text == "is" || t.text == "for" || t.text == "if" || t.text == "lambda") {
          bad("'" + t.text + "' is not supported in an expression");
        } else {
          out += t.text;
        }
        break;
      case token_kind::op:
        if (t.text == "(") {
          std::size_t close = closing(tokens, i);
          out += "(" + argument_list(tokens, i + 1, close - 1, codes) + ")";
          i = close - 1;
        } else if (t.text == "[" || t.text == "]") {
          bad("a list cannot stand in an arithmetic expression");
        } else if (t.text == "**") {
          out += "^";
        } else if (t.text == "//") {
          out += "#";
        } else if (t.text == ",") {
          bad("a ',' outside a function call");
        } else if (t.text == ")") {
          bad("unbalanced ')'");
        } else {
          out += t.text;
        }
        break;
    }
  }
  return out;
}

double python_mod(double a, double b) {
  if (b == 0) throw division_by_zero{};
  return a - b * std::floor(a / b);
}

double python_floordiv(double a, double b) {
  if (b == 0) throw division_by_zero{};
  return std::floor(a / b);
}

double python_int(double a) { return std::trunc(a); }
double python_float(double a) { return a; }

}  // namespace

std::vector<token> tokenize(const std::string& text) {
  std::vector<token> out;
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      std::size_t j = i;
      while (j < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.' || text[j] == '_')) {
        ++j;
      }
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
        if (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) {
          j = k;
          while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        }
      }
      std::string number;
      for (std::size_t k = i; k < j; ++k)
        if (text[k] != '_') number += text[k];
      out.push_back({token_kind::number, number});
      i = j;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      out.push_back({token_kind::name, text.substr(i, j - i)});
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::size_t j = text.find(c, i + 1);
      if (j == std::string::npos) bad("unterminated string starting at position " + std::to_string(i));
      out.push_back({token_kind::string, text.substr(i + 1, j - i - 1)});
      i = j + 1;
      continue;
    }
    static const char* const two[] = {"**", "//", "==", "!=", "<=", ">="};
    bool matched = false;
    for (const char* op : two) {
      if (text.compare(i, 2, op) == 0) {
        out.push_back({token_kind::op, op});
        i += 2;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (std::string("+-*/%()[],<>").find(c) != std::string::npos) {
      out.push_back({token_kind::op, std::string(1, c)});
      ++i;
      continue;
    }
    bad(std::string("unexpected character '") + c + "' at position " + std::to_string(i));
  }
  return out;
}

std::size_t closing(const std::vector<token>& tokens, std::size_t open) {
  std::vector<std::string> expected;
  for (std::size_t i = open; i < tokens.size(); ++i) {
    if (is_open(tokens[i])) {
      expected.push_back(tokens[i].text == "(" ? ")" : "]");
    } else if (is_close(tokens[i])) {
      if (expected.empty() || expected.back() != tokens[i].text) bad("unbalanced '" + tokens[i].text + "'");
      expected.pop_back();
      if (expected.empty()) return i + 1;
    }
  }
  bad("'" + tokens[open].text + "' is never closed");
}

std::string to_muparser(const std::vector<token>& tokens, std::size_t begin, std::size_t end, string_codes& codes) {
  if (begin >= end) bad("an operand is missing");
  auto join = [&](const std::vector<std::size_t>& at, const char* op) {
    std::string out;
    std::size_t from = begin;
    for (std::size_t k = 0; k <= at.size(); ++k) {
      std::size_t to = k < at.size() ? at[k] : end;
      if (k > 0) out += op;
      out += "(" + to_muparser(tokens, from, to, codes) + ")";
      from = to + 1;
    }
    return out;
  };
  auto ors = split_points(tokens, begin, end, [](const token& t) { return is_word(t, "or"); });
  if (!ors.empty()) return join(ors, "||");
  auto ands = split_points(tokens, begin, end, [](const token& t) { return is_word(t, "and"); });
  if (!ands.empty()) return join(ands, "&&");
  if (is_word(tokens[begin], "not")) return "((" + to_muparser(tokens, begin + 1, end, codes) + ")==0)";
  // A whole operand in parentheses may hold boolean structure of its own.
  if (tokens[begin].kind == token_kind::op && tokens[begin].text == "(" && closing(tokens, begin) == end) {
    return "(" + to_muparser(tokens, begin + 1, end - 1, codes) + ")";
  }
  auto comparisons = split_points(tokens, begin, end, is_comparison);
  if (comparisons.size() >= 2) {
    // Python's chain a < b <= c means (a < b) and (b <= c).
    std::vector<std::string> operands;
    std::size_t from = begin;
    for (std::size_t k = 0; k <= comparisons.size(); ++k) {
      std::size_t to = k < comparisons.size() ? comparisons[k] : end;
      if (from >= to) bad("a comparison lacks an operand in '" + text_of(tokens, begin, end) + "'");
      operands.push_back("(" + to_muparser(tokens, from, to, codes) + ")");
      from = to + 1;
    }
    std::string out;
    for (std::size_t k = 0; k < comparisons.size(); ++k) {
      if (k > 0) out += "&&";
      out += "(" + operands[k] + tokens[comparisons[k]].text + operands[k + 1] + ")";
    }
    return out;
  }
  if (comparisons.size() == 1) {
    std::size_t at = comparisons.front();
    if (at == begin || at + 1 == end) bad("a comparison lacks an operand in '" + text_of(tokens, begin, end) + "'");
    return "(" + to_muparser(tokens, begin, at, codes) + ")" + tokens[at].text + "(" +
           to_muparser(tokens, at + 1, end, codes) + ")";
  }
  return arithmetic(tokens, begin, end, codes);
}

std::unique_ptr<mu::Parser> make_parser() {
  auto parser = std::make_unique<mu::Parser>();
  parser->DefineOprt("%", python_mod, mu::prMUL_DIV);
  parser->DefineOprt("#", python_floordiv, mu::prMUL_DIV);
  parser->DefineFun("int", python_int);
  parser->DefineFun("float", python_float);
  return parser;
}

}  // namespace tune::python
