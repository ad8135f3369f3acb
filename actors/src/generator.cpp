// The generator owns the strategy: it asks for proposals, drops anything that
// was handed out before (measured, recorded or in flight) or is invalid, and
// tells the strategy every result.
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <cmath>
#include <cstdio>
#include <exception>

#include "stage_clock.hpp"
#include "tune/actors/interfaces.hpp"

namespace tune::actors {
namespace {

struct generator_state {
  search_space_ptr space;
  std::shared_ptr<strategy> search;
  configuration_set handed_out;
  std::uint64_t next_id = 0;
  double cpu_s = 0.0;
  static inline const char* name = "generator";
};

// A strategy whose proposals were dropped as duplicates is asked again. After
// a resume it may well repeat, in order, everything the dead run handed out,
// so the rounds grow with what was handed out; the bound only stops a
// strategy that keeps repeating itself.
std::size_t max_propose_rounds(const generator_state& st, std::uint32_t n) {
  return 16 + st.handed_out.size() / (n ? n : 1);
}

std::vector<candidate> fresh_candidates(generator_state& st, std::uint32_t n) {
  std::vector<candidate> out;
  std::size_t rounds = max_propose_rounds(st, n);
  for (std::size_t round = 0; round < rounds && out.size() < n; ++round) {
    std::vector<configuration> proposals;
    try {
      proposals = st.search->propose(n - out.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "generator: strategy %s failed to propose: %s\n", st.search->name().c_str(), e.what());
      break;
    }
    if (proposals.empty()) break;
    for (auto& config : proposals) {
      if (out.size() >= n) break;
      if (!st.space->is_valid(config) || !st.handed_out.insert(config).second) continue;
      out.push_back(candidate{st.next_id++, std::move(config)});
    }
  }
  return out;
}

void observe(generator_state& st, const measured_trial& trial) {
  try {
    trial_result result = trial;  // the strategy's view; a time counts only when ok
    if (!result.ok()) result.time_ms = std::nan("");
    st.search->observe(result);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "generator: strategy %s failed to observe trial %llu: %s\n", st.search->name().c_str(),
                 static_cast<unsigned long long>(trial.candidate_id), e.what());
  }
}

generator_actor::behavior_type generator(generator_actor::stateful_pointer<generator_state> self,
                                         search_space_ptr space, std::shared_ptr<strategy> search,
                                         std::vector<measured_trial> prior) {
  auto& st = self->state;
  {
    detail::cpu_scope cpu(st.cpu_s);
    st.space = std::move(space);
    st.search = std::move(search);
    for (const auto& trial : prior) {
      observe(st, trial);
      st.handed_out.insert(trial.config);
      if (trial.candidate_id >= st.next_id) st.next_id = trial.candidate_id + 1;
    }
  }
  return {
      [self](demand_atom, std::uint32_t n) {
        detail::cpu_scope cpu(self->state.cpu_s);
        return fresh_candidates(self->state, n);
      },
      [self](observe_atom, const measured_trial& trial) {
        detail::cpu_scope cpu(self->state.cpu_s);
        observe(self->state, trial);
      },
      [self](stats_atom, double from, double to) {
        return stage_stats{1, 0.0, to - from, self->state.cpu_s};
      },
  };
}

}  // namespace

generator_actor spawn_generator(caf::actor_system& system, search_space_ptr space, std::unique_ptr<strategy> strategy,
                                std::vector<measured_trial> prior) {
  return system.spawn(generator, std::move(space), std::shared_ptr<tune::strategy>(std::move(strategy)),
                      std::move(prior));
}

}  // namespace tune::actors
