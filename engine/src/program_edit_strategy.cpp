// gevo: GEVO-ML's search over edit lists (program_edit.hpp) with NSGA-II
// selection on {run time, error}.
//
// Generations in steady state: the first proposal is the original program
// (the empty list), the reference every variant is compared with; then, until
// `population` ok results have arrived, each proposal is a copy of the
// original with `initial_edits` random edits (the initial population, the
// paper's three). From then on the pool is the current population plus every
// ok result that arrived since the last propose(); each propose() first runs
// NSGA-II's environmental selection on the pool down to `population` (whole
// fronts, the last cut by crowding distance), then breeds: two parents by
// binary tournament on (front rank, crowding distance); with probability
// `crossover` one-point messy crossover makes two children, else the children
// are copies of the parents; each child gets one more random edit with
// probability `mutation`. A child already measured or in flight gets further
// random edits until it is new (at most 100). With a validity check (the
// program's side: every edit applies, the module verifies), an invalid list
// is drawn again, up to `max_draws` times: an initial variant's edits anew, a
// child by crossing and mutating the same parents again (the same side of the
// pair), an appended edit by another. Both children of a pairing are
// handed out (the second waits for the next request). Failed results are not
// ranked, so their edits are never inherited. Identical edit lists are
// measured once here; different lists that give the same program are caught
// by the program's side (same IR hash).
#include <algorithm>
#include <deque>
#include <stdexcept>

#include "tune/engine/pareto.hpp"
#include "tune/engine/program_edit.hpp"

namespace tune {

namespace {
class program_edit_strategy final : public strategy {
 public:
  program_edit_strategy(program_outline outline, const strategy_options& options, edit_list_check valid)
      : outline_(std::move(outline)), valid_(std::move(valid)), rng_(options.seed) {
    auto hyper = program_edit_defaults();
    for (auto& [name, value] : options.hyper) {
      if (!hyper.count(name)) {
        std::string accepted;
        for (auto& [known, unused] : hyper) accepted += (accepted.empty() ? "" : ", ") + known;
        throw std::invalid_argument("strategy gevo has no hyperparameter '" + name + "' (accepted: " + accepted + ")");
      }
      hyper[name] = value;
    }
    auto count = [&](const char* name, double minimum) {
      double v = hyper[name];
      if (!(v >= minimum) || v != static_cast<double>(static_cast<std::size_t>(v)) || v > 1e6)
        throw std::invalid_argument("gevo hyperparameter '" + std::string(name) +
                                    "' must be a whole number >= " + std::to_string(static_cast<int>(minimum)));
      return static_cast<std::size_t>(v);
    };
    auto probability = [&](const char* name) {
      double v = hyper[name];
      if (!(v >= 0 && v <= 1))
        throw std::invalid_argument("gevo hyperparameter '" + std::string(name) + "' must lie in [0, 1]");
      return v;
    };
    population_ = count("population", 2);
    initial_edits_ = count("initial_edits", 1);
    max_draws_ = count("max_draws", 1);
    crossover_ = probability("crossover");
    mutation_ = probability("mutation");
    double kinds = hyper["edit_kinds"];
    if (!(kinds >= 1 && kinds <= all_edit_kinds) || kinds != static_cast<double>(static_cast<edit_kind_set>(kinds)))
      throw std::invalid_argument(
          "gevo hyperparameter 'edit_kinds' must be a comma-separated subset of copy, delete, move, swap, replace "
          "(e.g. edit_kinds=copy,delete, GEVO-ML's), or that set as a number (bit 1 << kind, 1 to 31)");
    kinds_ = static_cast<edit_kind_set>(kinds);
    try {
      rng_type probe(0);
      random_edit(outline_, probe, kinds_);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("strategy gevo: ") + e.what());
    }
  }

  std::string name() const override { return "gevo"; }

  std::vector<configuration> propose(std::size_t n) override {
    std::vector<configuration> out;
    if (n > 0 && !seen_.count(configuration{})) claim(out, edit_list{});
    while (out.size() < n) {
      if (points_.size() < population_) {
        auto initial = [this] {
          edit_list edits;
          for (std::size_t i = 0; i < initial_edits_; ++i) edits.push_back(random_edit(outline_, rng_, kinds_));
          return edits;
        };
        if (!claim(out, fresh(valid_or_redrawn(initial(), initial)))) break;
        continue;
      }
      if (dirty_) select();
      if (pending_.empty()) breed();
      if (!claim(out, fresh(std::move(pending_.front())))) break;
      pending_.pop_front();
    }
    return out;
  }

  void observe(const trial_result& result) override {
    seen_.insert(result.config);
    if (!result.ok()) return;
    points_.push_back(objectives_of(result));
    lists_.push_back(decode(result.config));
    dirty_ = true;
  }

 private:
  bool claim(std::vector<configuration>& out, const edit_list& edits) {
    auto config = encode(edits);
    if (!seen_.insert(config).second) return false;
    out.push_back(std::move(config));
    return true;
  }

  // Appends random edits until the list is not seen (at most 100 tries; the
  // last try is returned even when seen, and claim() then refuses it); an
  // appended edit that makes the list invalid is drawn again.
  edit_list fresh(edit_list edits) {
    for (int i = 0; i < 100 && seen_.count(encode(edits)); ++i) {
      auto longer = [&] {
        auto out = edits;
        out.push_back(random_edit(outline_, rng_, kinds_));
        return out;
      };
      edits = valid_or_redrawn(longer(), longer);
    }
    return edits;
  }

  // `first` when it is valid, else the first valid of further lists from
  // `again`, at most max_draws lists in all (the last one when none is).
  template <class Draw>
  edit_list valid_or_redrawn(edit_list first, Draw again) {
    if (!valid_ || max_draws_ <= 1) return first;
    for (std::size_t draw = 1; !valid_(first) && draw < max_draws_; ++draw) first = again();
    return first;
  }

  void select() {
    keep_survivors(points_, lists_, population_);
    ranking_ = crowded_ranking(points_);
    dirty_ = false;
  }

  void breed() {
    const auto& a = lists_[ranking_.tournament(rng_)];
    const auto& b = lists_[ranking_.tournament(rng_)];
    auto pairing = [&] {
      std::uniform_real_distribution<double> unit(0.0, 1.0);
      std::pair<edit_list, edit_list> children{a, b};
      if (unit(rng_) < crossover_) children = messy_crossover(a, b, rng_);
      for (auto* child : {&children.first, &children.second})
        if (unit(rng_) < mutation_) child->push_back(random_edit(outline_, rng_, kinds_));
      return children;
    };
    auto children = pairing();
    pending_.push_back(valid_or_redrawn(std::move(children.first), [&] { return pairing().first; }));
    pending_.push_back(valid_or_redrawn(std::move(children.second), [&] { return pairing().second; }));
  }

  program_outline outline_;
  edit_list_check valid_;
  rng_type rng_;
  std::size_t population_ = 0;
  std::size_t initial_edits_ = 0;
  std::size_t max_draws_ = 1;
  double crossover_ = 0;
  double mutation_ = 0;
  edit_kind_set kinds_ = gevo_ml_edit_kinds;
  configuration_set seen_;  // measured or in flight
  bool dirty_ = false;
  std::vector<std::vector<double>> points_;  // ok results in the pool
  std::vector<edit_list> lists_;
  crowded_ranking ranking_;
  std::deque<edit_list> pending_;  // bred children not handed out yet
};
}  // namespace

const std::map<std::string, double>& program_edit_defaults() {
  static const std::map<std::string, double> table = {{"population", 32}, {"initial_edits", 3},
                                                      {"crossover", 0.8}, {"mutation", 0.3},
                                                      {"max_draws", 20},  {"edit_kinds", gevo_ml_edit_kinds}};
  return table;
}

std::unique_ptr<strategy> make_program_edit_strategy(program_outline outline, const strategy_options& options,
                                                     edit_list_check valid) {
  return std::make_unique<program_edit_strategy>(std::move(outline), options, std::move(valid));
}

}  // namespace tune
