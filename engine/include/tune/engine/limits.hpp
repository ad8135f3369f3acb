#pragma once
// The limits of a run, declared once and held by every layer that needs them:
// the topology file (timeouts), the facade's session, the pipeline and each of
// its stages, a node's task.

#include <cstdint>

namespace tune {

/// How long one build and one run of a candidate may take, in backend
/// seconds (simulated seconds for a replayed dataset).
struct timeouts {
  double compile_s = 60.0;
  double run_s = 10.0;
};

/// When a run stops handing out work.
struct budget {
  /// Trials in all, those recorded before a resume included.
  std::uint64_t trials = 100;
  /// Backend seconds since the start; 0: no time budget.
  double seconds = 0.0;
};

}  // namespace tune
