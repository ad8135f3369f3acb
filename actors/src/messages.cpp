#include <caf/actor_system_config.hpp>

#include "tune/actors/interfaces.hpp"

namespace tune::actors {

void register_message_types(caf::actor_system_config& config) {
  config.add_message_types<caf::id_block::tune_actors>();
}

trial_result measured_trial::to_result() const {
  trial_result result;
  result.config = config;
  result.state = state;
  result.time_ms = ok() ? time_ms : std::nan("");
  result.objectives = objectives;
  return result;
}

}  // namespace tune::actors
