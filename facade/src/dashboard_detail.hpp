#pragma once
// The dashboard a session serves during its run (session_options::dashboard_listen).

#include <memory>
#include <string>

#include "tune/dashboard/server.hpp"
#include "tune/tune.hpp"

namespace tune::detail {

/// Checks and binds the session's dashboard (nullptr when none is asked
/// for); throws input_error naming dashboard_listen.
std::unique_ptr<dashboard::server> make_session_dashboard(const session_options& options);

/// Subscribes it to the run's event stream and starts serving.
void start_session_dashboard(dashboard::server& board, const std::string& events_endpoint,
                             const session_options& options);

/// Lets the run's last events reach the browsers (up to 2 s), then stops.
void finish_session_dashboard(dashboard::server& board);

/// The same for a model run: up to 2 s for its last model_progress event.
void finish_model_dashboard(dashboard::server& board);

}  // namespace tune::detail
