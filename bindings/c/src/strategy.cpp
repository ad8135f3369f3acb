// tune_strategy_*: the engine's ask/tell strategies for C callers.
#include <cmath>

#include "boundary.hpp"
#include "tune/engine/text.hpp"

using tune::c_api::boundary_error;
using tune::c_api::guarded;
using tune::c_api::require;

namespace {

std::string joined_strategy_names() { return tune::join(tune::strategy_names()); }

}  // namespace

extern "C" {

const char* tune_strategy_names(void) {
  static const std::string names = joined_strategy_names();
  return names.c_str();
}

const char* tune_default_strategy(void) {
  static const std::string name = tune::default_strategy_name();
  return name.c_str();
}

tune_status tune_strategy_create(const char* name, const tune_space* space, uint64_t seed, const char* const* hyper,
                                 size_t hyper_count, tune_strategy** out) {
  return guarded(__func__, [&] {
    require(space, "space");
    require(out, "out");
    *out = nullptr;
    if (hyper_count > 0) require(hyper, "hyper");
    std::vector<std::string> items;
    for (size_t i = 0; i < hyper_count; ++i) {
      require(hyper[i], ("hyper[" + std::to_string(i) + "]").c_str());
      items.emplace_back(hyper[i]);
    }
    tune::strategy_options options;
    options.seed = seed;
    options.hyper = tune::parse_hyper(items, "tune_strategy_create hyper");
    auto handle = std::make_unique<tune_strategy>();
    handle->space = space->space;
    handle->name = name && *name ? name : tune::default_strategy_name();
    handle->strategy = tune::make_strategy(handle->name, handle->space, options);
    *out = handle.release();
  });
}

void tune_strategy_free(tune_strategy* strategy) { delete strategy; }

tune_status tune_strategy_name(const tune_strategy* strategy, const char** name) {
  return guarded(__func__, [&] {
    require(strategy, "strategy");
    require(name, "name");
    *name = strategy->name.c_str();
  });
}

tune_status tune_strategy_propose(tune_strategy* strategy, size_t n, size_t* count) {
  return guarded(__func__, [&] {
    require(strategy, "strategy");
    require(count, "count");
    *count = 0;
    strategy->proposals.clear();
    for (const auto& config : strategy->strategy->propose(n))
      strategy->proposals.push_back(strategy->space->to_json(config));
    *count = strategy->proposals.size();
  });
}

tune_status tune_strategy_proposal(const tune_strategy* strategy, size_t index, const char** config_json) {
  return guarded(__func__, [&] {
    require(strategy, "strategy");
    require(config_json, "config_json");
    if (index >= strategy->proposals.size())
      throw boundary_error(TUNE_ERROR_OUT_OF_RANGE, "`index` " + std::to_string(index) + " is past the last of the " +
                                                        std::to_string(strategy->proposals.size()) +
                                                        " configurations of the last tune_strategy_propose");
    *config_json = strategy->proposals[index].c_str();
  });
}

tune_status tune_strategy_observe(tune_strategy* strategy, const char* config_json, double time_ms,
                                  tune_trial_status status) {
  return guarded(__func__, [&] {
    require(strategy, "strategy");
    auto value = static_cast<int>(status);
    if (value < TUNE_TRIAL_OK || value > TUNE_TRIAL_UNKNOWN)
      throw std::invalid_argument("`status` is " + std::to_string(value) +
                                  "; expected a tune_trial_status (TUNE_TRIAL_OK .. TUNE_TRIAL_UNKNOWN)");
    tune::trial_result result;
    result.config = tune::c_api::parse_config(*strategy->space, config_json, "config_json");
    result.state = static_cast<tune::status>(value);
    if (result.state == tune::status::ok) {
      if (!std::isfinite(time_ms))
        throw std::invalid_argument("`time_ms` is " + std::to_string(time_ms) +
                                    " with TUNE_TRIAL_OK; pass a finite time, or a failure status");
      result.time_ms = time_ms;
    }
    strategy->strategy->observe(result);
  });
}

}  // extern "C"
