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

/// A pids cgroup of its own (as process_limits makes one for run_process)
/// for processes that join it by writing "0" to procs_file() (and all they
/// start): at most max_processes processes and threads in it at once. When
/// it goes, every process left in it is killed and it is removed. Without
/// one (the cgroup file system is not writable, or max_processes is not
/// positive) procs_file() is empty.
class pids_cgroup {
 public:
  explicit pids_cgroup(int max_processes);
  ~pids_cgroup();
  pids_cgroup(const pids_cgroup&) = delete;
  pids_cgroup& operator=(const pids_cgroup&) = delete;

  /// Its cgroup.procs file; empty when there is no cgroup.
  const std::string& procs_file() const { return procs_; }
  /// How many forks or threads in it have failed at its limit so far.
  long limit_hits() const;

 private:
  std::string dir_, procs_;
};

/// A program started to be talked to (start_with_channel).
struct channel_process {
  int pid = -1;       ///< -1: it could not be started (see error)
  int channel = -1;   ///< the caller's end of a stream socket (close-on-exec)
  std::string error;  ///< why it could not be started
};

/// Starts argv[0] (looked up in PATH when it has no '/') with arguments
/// argv[1..] in a process group of its own, with stdin, stdout and stderr on
/// /dev/null and descriptor 3 the other end of `channel`, no other
/// descriptor of the caller, no signal blocked and SIGPIPE and the
/// termination signals at their defaults; in the cgroup of `cgroup_procs`
/// (a pids_cgroup's procs_file()) when not empty, joined before the program
/// starts. The caller talks to it, reaps it (waitpid) and closes the
/// channel. Thread-safe.
channel_process start_with_channel(const std::vector<std::string>& argv, const std::string& cgroup_procs = {});

/// Runs argv[0] (looked up in PATH when it has no '/') with arguments argv[1..].
/// Thread-safe. The program starts with only stdin (/dev/null), stdout and
/// stderr open, no signal blocked, and SIGPIPE and the termination signals
/// at their defaults, in the caller's environment with `environment`'s
/// NAME=VALUE entries set over it (an entry replaces the caller's variable of
/// that name).
process_result run_process(const std::vector<std::string>& argv, double timeout_s, std::size_t output_limit = 1 << 20,
                           const process_limits& limits = {}, const std::vector<std::string>& environment = {});

}  // namespace tune
