#pragma once
// Runs a program by argv (never through a shell) in a process group of its
// own, collects its stdout and stderr (head and tail past a limit), and kills
// the whole group when the program exits or the timeout passes (a compiler's
// cc1plus, a kernel's threads or the processes it forked die with it).

#include <string>
#include <vector>

namespace tune {

struct process_result {
  bool started = false;    ///< false: the program could not be spawned (see error)
  bool timed_out = false;  ///< killed after the timeout
  int exit_code = -1;      ///< valid when it exited normally
  int signal = 0;          ///< the signal that ended it, 0 if none
  std::string output;      ///< stdout and stderr interleaved; past the output limit its head and tail
  std::string error;       ///< why it could not be spawned
  double seconds = 0.0;    ///< wall time

  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
};

/// Runs argv[0] (looked up in PATH when it has no '/') with arguments argv[1..].
/// Thread-safe.
process_result run_process(const std::vector<std::string>& argv, double timeout_s, std::size_t output_limit = 1 << 20);

}  // namespace tune
