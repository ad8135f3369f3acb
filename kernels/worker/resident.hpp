#pragma once
// tune-kernel-worker --resident: a measuring process that the engine starts
// once per device and keeps, measuring one request after another. What does
// not change between trials stays in it: the filled inputs, the expected
// outputs (read once), the pinning to the device's cores, and for a GPU the
// context, the device buffers, the expected outputs on the device with the
// comparison module ("check_module" in the request, CUDA) and the events.
//
// Channel: descriptor 3, a stream socket to the engine (stdin, stdout and
// stderr are /dev/null). The engine writes one request per line: the measure
// request of tune_kernel_worker.cpp plus
//   "timeout_s":    the trial's limit (CPU: enforced here on the child);
//   "reference_ms", "slow_factor", "min_slow_ms", "margin", "first_limit_ms":
//                   the best time known and the early-stop policy
//                   (measure_rules.hpp).
// The worker answers with progress records, then the reply, one JSON object
// per line:
//   {"started": pid}  CPU: the child measuring this request leads process
//                     group pid (the engine kills it if this process dies);
//   {"run": n}        GPU, when a run may be too slow: run n (0: the checked
//                     run) begins now (the engine stops a run past the limit
//                     by killing this process);
//   {"idle": n}       GPU: run n has ended;
//   {"status": ..., "time_ms", "median_ms", "min_ms", "repeats",
//    "stopped_early", "kernel_s", "max_error", "checked_on", "message"}: the reply, with
//                     "exit": true when this process ends after it (a GPU
//                     error may have broken the context).
// A CPU request with "mode": "interleave" and "libraries" (built
// configurations of the same task) instead of "library" times them against
// each other in one child (measure_interleaved: each checked, then "rounds"
// rounds of a burst of each in turn); its reply has "rounds_ms" (per
// library, per round) instead of the times.
// It exits when the channel closes (the engine is gone), killing the child
// it runs.
//
// CPU kernels run in a child forked per request from this single-threaded
// process (born in the pids cgroup the engine started this process in, if
// any): the child takes stdout and stderr into a pipe of this process (head
// and tail kept), limits its address space,
// dlopens the kernel, runs it checked, compares, times it and writes its
// reply on a pipe of its own, so a kernel that prints cannot forge a reply.
// The child marks each run's start in shared memory; this process polls its
// pipes and the child's exit, and kills the child's process group when a run
// passes the slow limit (too_slow) or the trial its timeout (run_timeout).
// It is the subreaper of what the child starts: after each trial it kills
// and reaps every process left, so the next trial starts alone. A crash,
// hang, memory-eating, forking or output-flooding kernel ends only its
// child. GPU kernels run in this process itself (a context cannot cross a
// fork): an error on the device is replied with "exit": true, and a hang is
// the engine's to end (it kills this process and starts another).

/// Serves requests on descriptor 3 until it closes; the exit code.
int run_resident();
