#include "tune/engine/constraint.hpp"

#include <muParser.h>

#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>

#include "python_expr.hpp"

namespace tune {
namespace {

/// The muParser variables a parameter exposes: its own name for a number or
/// string, `name_0`, `name_1`, … for the parts of a tuple.
std::vector<std::string> variable_names(const parameter& p) {
  if (p.kind() == parameter_kind::factorization || p.kind() == parameter_kind::permutation) {
    auto width = std::get<std::vector<std::int64_t>>(p.value(0)).size();
    std::vector<std::string> names;
    for (std::size_t i = 0; i < width; ++i) names.push_back(p.name() + "_" + std::to_string(i));
    return names;
  }
  return {p.name()};
}

/// Variable values of every value of one parameter, precomputed.
struct value_table {
  std::size_t width = 1;
  std::vector<double> values;  // cardinality × width
};

constexpr std::uint64_t max_table_rows = 1u << 20;

void append_values(const parameter_value& v, const python::string_codes& codes, std::vector<double>& out) {
  if (auto* d = std::get_if<double>(&v)) {
    out.push_back(*d);
  } else if (auto* s = std::get_if<std::string>(&v)) {
    out.push_back(codes.at(*s));
  } else {
    for (auto x : std::get<std::vector<std::int64_t>>(v)) out.push_back(static_cast<double>(x));
  }
}

class muparser_constraints final : public constraint_set {
 public:
  muparser_constraints(const search_space& space, std::vector<std::string> expressions)
      : parameters_(space.parameters()), expressions_(std::move(expressions)) {
    // Every string value of a categorical parameter gets its code first.
    for (const auto& p : parameters_) {
      if (p->kind() != parameter_kind::categorical) continue;
      for (std::uint64_t i = 0; i < p->cardinality(); ++i) {
        auto value = p->value(i);
        if (auto* s = std::get_if<std::string>(&value))
          if (!codes_.count(*s)) codes_.emplace(*s, -1.0e15 - static_cast<double>(codes_.size()));
      }
    }
    std::map<std::string, std::size_t> owner;  // variable name -> parameter
    for (std::size_t p = 0; p < parameters_.size(); ++p) {
      offsets_.push_back(variables_.size());
      for (auto& n : variable_names(*parameters_[p])) {
        owner.emplace(n, p);
        variables_.push_back(std::move(n));
      }
    }
    offsets_.push_back(variables_.size());
    for (const auto& e : expressions_) {
      try {
        auto tokens = python::tokenize(e);
        translated_.push_back(python::to_muparser(tokens, 0, tokens.size(), codes_));
      } catch (const std::invalid_argument& error) {
        throw std::invalid_argument("constraint '" + e + "': " + error.what());
      }
    }
    // Compiling once reports unknown names and syntax errors now and tells
    // which parameters the expressions read; only those are set per call.
    auto probe = make_evaluator();
    used_.assign(parameters_.size(), false);
    for (const auto& parser : probe->parsers)
      for (const auto& used : parser->GetUsedVar()) used_[owner.at(used.first)] = true;
    for (std::size_t p = 0; p < parameters_.size(); ++p) {
      value_table table;
      table.width = offsets_[p + 1] - offsets_[p];
      if (used_[p] && parameters_[p]->cardinality() <= max_table_rows) {
        for (std::uint64_t i = 0; i < parameters_[p]->cardinality(); ++i)
          append_values(parameters_[p]->value(i), codes_, table.values);
      }
      tables_.push_back(std::move(table));
    }
    release(std::move(probe));
  }

  bool satisfied(const configuration& config) const override {
    if (config.size() != parameters_.size()) return false;
    auto evaluator = acquire();
    for (std::size_t p = 0; p < parameters_.size(); ++p) {
      if (!used_[p]) continue;
      const auto& table = tables_[p];
      double* target = &evaluator->values[offsets_[p]];
      if (!table.values.empty()) {
        const double* row = &table.values[config[p] * table.width];
        std::copy(row, row + table.width, target);
      } else {
        std::vector<double> values;  // a parameter too large to tabulate
        append_values(parameters_[p]->value(config[p]), codes_, values);
        std::copy(values.begin(), values.end(), target);
      }
    }
    bool ok = true;
    try {
      for (auto& parser : evaluator->parsers) {
        double v = parser->Eval();
        if (std::isnan(v) || v == 0) {
          ok = false;
          break;
        }
      }
    } catch (...) {
      // Python raises on a zero divisor; such a configuration is invalid.
      ok = false;
    }
    release(std::move(evaluator));
    return ok;
  }

  const std::vector<std::string>& expressions() const override { return expressions_; }

 private:
  /// One set of parsers bound to one block of variables; not thread-safe on
  /// its own, so evaluators are pooled and each call borrows one.
  struct evaluator {
    std::vector<double> values;
    std::vector<std::unique_ptr<mu::Parser>> parsers;
  };

  std::unique_ptr<evaluator> make_evaluator() const {
    auto ev = std::make_unique<evaluator>();
    ev->values.assign(variables_.size(), 0.0);
    for (std::size_t k = 0; k < translated_.size(); ++k) {
      auto parser = python::make_parser();
      try {
        for (std::size_t v = 0; v < variables_.size(); ++v) parser->DefineVar(variables_[v], &ev->values[v]);
        parser->SetExpr(translated_[k]);
        parser->Eval();  // compiles to bytecode
      } catch (const mu::Parser::exception_type& error) {
        throw std::invalid_argument("constraint '" + expressions_[k] + "': " + error.GetMsg() + known_names());
      } catch (const python::division_by_zero&) {
        // Fine: the expression divides by a parameter that is 0 here.
      }
      ev->parsers.push_back(std::move(parser));
    }
    return ev;
  }

  std::string known_names() const {
    std::string out = " (the names are:";
    for (const auto& v : variables_) out += " " + v;
    return out + ")";
  }

  std::unique_ptr<evaluator> acquire() const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!pool_.empty()) {
        auto ev = std::move(pool_.back());
        pool_.pop_back();
        return ev;
      }
    }
    return make_evaluator();
  }

  void release(std::unique_ptr<evaluator> ev) const {
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.push_back(std::move(ev));
  }

  std::vector<parameter_ptr> parameters_;
  std::vector<std::string> expressions_;
  std::vector<std::string> translated_;
  python::string_codes codes_;
  std::vector<std::string> variables_;
  std::vector<std::size_t> offsets_;  // per parameter, plus the end
  std::vector<bool> used_;
  std::vector<value_table> tables_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<evaluator>> pool_;
};

}  // namespace

std::shared_ptr<constraint_set> make_constraint_set(const search_space& space, std::vector<std::string> expressions) {
  for (const auto& e : expressions) {
    if (e.find_first_not_of(" \t\r\n") == std::string::npos)
      throw std::invalid_argument("constraint '" + e + "': empty; write a boolean expression such as 'a * b <= 1024'");
  }
  return std::make_shared<muparser_constraints>(space, std::move(expressions));
}

std::string to_muparser_syntax(const std::string& python_expression) {
  auto tokens = python::tokenize(python_expression);
  python::string_codes codes;
  return python::to_muparser(tokens, 0, tokens.size(), codes);
}

}  // namespace tune
