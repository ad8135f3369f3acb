#pragma once
// Runs a program by argv (never through a shell) in a process group of its
// own, collects its stdout and stderr (head and tail past a limit), and kills
// the whole group when the program exits or the timeout passes (a compiler's
// cc1plus, a kernel's threads or the processes it forked die with it).
//
// The group's leader is a small guard process forked from the caller: it
// waits for the program and ends as the program ended, and when the calling
// thread's process dies (even by SIGKILL) it kills the whole group, so that
// no compiler or worker outlives the engine that started it.

#include <string>
#include <vector>

namespace tune {

struct process_result {
  bool started = false;                ///< false: the program could not be spawned (see error)
  bool timed_out = false;              ///< killed after the timeout
  int exit_code = -1;                  ///< valid when it exited normally
  int signal = 0;                      ///< the signal that ended it, 0 if none
  std::string output;                  ///< stdout and stderr interleaved; past the output limit its head and tail
  std::string error;                   ///< why it could not be spawned
  double seconds = 0.0;                ///< wall time
  bool process_limit_reached = false;  ///< a fork or thread failed at process_limits::max_processes

  bool ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
};

struct process_limits {
  /// At most this many processes and threads at once, the program and all
  /// it starts (a fork bomb's forks fail past it); 0: no limit. Enforced by a
  /// pids cgroup of its own where the cgroup file system is writable (root,
  /// or a delegated cgroup), which also kills what left the process group;
  /// elsewhere not enforced.
  int max_processes = 0;
};

/// The file a program name stands for: `name` itself when it holds a '/',
/// else the first executable file of that name in PATH (as execvp looks it
/// up; /usr/local/bin:/usr/bin:/bin when PATH is unset). `error` is 0 when
/// found, else the errno the lookup ended with (ENOENT, EACCES), and `name`
/// is returned.
std::string find_program(const std::string& name, int& error);

/// True when process_limits::max_processes is enforced on this machine.
bool process_limits_enforced();

/// Runs argv[0] (looked up in PATH when it has no '/') with arguments argv[1..].
/// Thread-safe. The program starts with only stdin (/dev/null), stdout and
/// stderr open, no signal blocked, and SIGPIPE and the termination signals
/// at their defaults.
process_result run_process(const std::vector<std::string>& argv, double timeout_s, std::size_t output_limit = 1 << 20,
                           const process_limits& limits = {});

}  // namespace tune
