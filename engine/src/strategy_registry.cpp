#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "strategies.hpp"
#include "tune/engine/strategy.hpp"
#include "tune/engine/text.hpp"

namespace tune {

namespace {
struct entry {
  std::string name;
  std::unique_ptr<strategy> (*make)(search_space_ptr, const strategy_options&);
  const detail::hyper_table& (*defaults)();
};

const std::vector<entry>& registry() {
  static const std::vector<entry> entries = {
      {"random", detail::make_random_strategy, detail::random_defaults},
      {"ga", detail::make_ga_strategy, detail::ga_defaults},
      {"opevo", detail::make_opevo_strategy, detail::opevo_defaults},
      {"nose", detail::make_nose_strategy, detail::nose_defaults},
      {"nsga2", detail::make_nsga2_strategy, detail::nsga2_defaults},
      {"opevo+knn", detail::make_opevo_knn_strategy, detail::opevo_knn_defaults},
      {"bo", detail::make_bo_strategy, detail::bo_defaults},
      {"xgb", detail::make_xgb_strategy, detail::xgb_defaults},
  };
  return entries;
}

/// The start configurations proposed first, then the strategy's own; every
/// result goes to the strategy.
class starting_strategy final : public strategy {
 public:
  starting_strategy(std::unique_ptr<strategy> inner, std::vector<configuration> start)
      : inner_(std::move(inner)), start_(std::move(start)), pending_(start_.rbegin(), start_.rend()) {}
  std::string name() const override { return inner_->name(); }

  std::vector<configuration> propose(std::size_t n) override {
    std::vector<configuration> out;
    for (; !pending_.empty() && out.size() < n; pending_.pop_back()) out.push_back(pending_.back());
    if (out.size() < n)
      for (auto& config : inner_->propose(n - out.size()))
        if (std::find(start_.begin(), start_.end(), config) == start_.end()) out.push_back(std::move(config));
    return out;
  }

  /// A start configuration observed before it was proposed (a resumed run
  /// recorded it) is not proposed again.
  void observe(const trial_result& result) override {
    std::erase(pending_, result.config);
    inner_->observe(result);
  }

 private:
  std::unique_ptr<strategy> inner_;
  std::vector<configuration> start_;
  std::vector<configuration> pending_;  ///< not yet proposed, the next last
};

const entry& find(std::string_view name) {
  for (auto& known : registry())
    if (known.name == name) return known;
  throw std::invalid_argument("unknown strategy '" + std::string(name) + "' (accepted: " + join(strategy_names()) +
                              ")");
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (auto& known : registry()) names.push_back(known.name);
  return names;
}

std::string default_strategy_name() { return "bo"; }

std::map<std::string, double> strategy_defaults(std::string_view name) { return find(name).defaults(); }

std::vector<trial_result> merged_prior(const std::vector<trial_result>& results) {
  struct merged {
    double log_sum = 0;
    std::size_t ok = 0;
    status failure = status::ok;
  };
  std::map<configuration, merged> by_config;
  for (const auto& r : results) {
    auto& m = by_config[r.config];
    if (r.state == status::ok && r.time_ms > 0) {
      m.log_sum += std::log(r.time_ms);
      ++m.ok;
    } else if (m.failure == status::ok) {
      m.failure = r.state == status::ok ? status::runtime_error : r.state;
    }
  }
  std::vector<trial_result> out;
  out.reserve(by_config.size());
  for (auto& [config, m] : by_config) {
    trial_result r;
    r.config = config;
    r.state = m.failure;
    if (m.failure == status::ok) r.time_ms = std::exp(m.log_sum / static_cast<double>(m.ok));
    out.push_back(std::move(r));
  }
  return out;
}

std::unique_ptr<strategy> make_strategy(std::string_view name, search_space_ptr space,
                                        const strategy_options& options) {
  auto made = find(name).make(space, options);
  if (options.start.empty()) return made;
  std::vector<configuration> start;
  for (const auto& config : options.start) {
    if (config.size() != space->dimension() || !space->is_valid(config))
      throw std::invalid_argument("start: a configuration that is not valid in the search space");
    if (std::find(start.begin(), start.end(), config) == start.end()) start.push_back(config);
  }
  return std::make_unique<starting_strategy>(std::move(made), std::move(start));
}

}  // namespace tune
