#include <caf/actor_system_config.hpp>

#include "tune/actors/interfaces.hpp"

namespace tune::actors {

void register_message_types(caf::actor_system_config& config) {
  config.add_message_types<caf::id_block::tune_actors>();
}

}  // namespace tune::actors
