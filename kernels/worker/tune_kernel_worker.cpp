// tune-kernel-worker: measures compiled kernels in a process apart from the
// engine, so that a kernel that crashes or hangs ends a process of its own
// and not the engine. Two ways to run it:
//
//   tune-kernel-worker '<request JSON>'    one request, the reply on stdout
//   tune-kernel-worker --resident          request after request on descriptor 3
//                                          (see resident.hpp)
//   tune-kernel-worker --nvrtc LIBRARY ARCH SOURCE CUBIN
//                                          one CUDA compile (see nvrtc_mode.hpp)
//
// Request ("program" mode: see program_mode.hpp): {"mode": "measure" | "reference" | "run", "library": ".so",
//           "entry": name,
//           "arguments": [{"type": "float*", "size": n, "output": bool, "value": x}],
//           "reference": file of expected outputs (written in reference mode; in run mode, every array
//           after one run),
//           "tolerance": t, "cores": [c, ...], "min_time_s": s,
//           "min_repeats": r, "max_repeats": r, "statistic": "median" | "min",
//           "reference_ms": the best time known (optional), "margin": m (timing stops early once even the
//           fastest timed run exceeds reference_ms x (1 + m), on CPUs already after the checked run when it
//           does by the first run's allowance; see measure_rules.hpp),
//           "memory_limit_mb": address space of the process running the kernel (RLIMIT_AS, CPU kernels only;
//           absent or 0: none),
//           CUDA only: "device": "cuda", "device_index": i, "grid": [x, y, z], "block": [x, y, z];
//           HIP only: "device": "hip", the same fields and "arch": the code object's offload arch}
// ("library" is then a cubin or an AMD code object and "entry" the kernel's name).
// Reply (one-shot: the last line of stdout): {"status": "ok" | "wrong_answer" | "runtime_error" | ...,
//           "time_ms": median (or min), "median_ms", "min_ms", "repeats": timed runs, "stopped_early": bool,
//           "timed_from": "timed_runs" | "checked_run" (the time is the checked run's alone),
//           "kernel_s": seconds inside the kernel's runs, "max_error": e, "message": text}
#include <cstdio>
#include <cstring>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "measure.hpp"
#include "nvrtc_mode.hpp"
#include "program_mode.hpp"
#include "resident.hpp"

namespace {

using namespace tune::worker;

// On a line of its own: a kernel may have printed a line without its end.
int reply(const nlohmann::json& answer) {
  std::printf("\n%s\n", answer.dump().c_str());
  std::fflush(stdout);
  return 0;
}

// Loads, checks and times the kernel of one request; the reply is its result.
int measure(const nlohmann::json& request) {
  std::string mode = request.value("mode", "measure");
  if (mode == "program") return run_program_mode(request);
  std::vector<argument_buffer> buffers;
  try {
    buffers = make_buffers(request.at("arguments"));
  } catch (const std::exception& e) {
    return reply(failure(std::string("bad arguments: ") + e.what()));
  }
  std::string why;
  auto runner = make_runner(request.value("device", "cpu"), why);
  if (!runner) return reply(failure(why));
  if (auto answer = runner->attach(request, buffers); !answer.is_null()) return reply(answer);
  if (auto answer = runner->load(request, request.value("library", ""), request.value("entry", "tune_entry"));
      !answer.is_null())
    return reply(answer);

  std::string reference_path = request.value("reference", "");
  run_marks marks;
  if (mode == "reference" || mode == "run") {
    if (auto answer = runner->run_checked(buffers, marks); !answer.is_null()) return reply(answer);
    if (auto problem = write_expected(reference_path, buffers, mode == "run"); !problem.empty())
      return reply(failure(problem));
    return reply({{"status", "ok"}, {"kernel_s", marks.kernel_s()}});
  }
  expected_outputs expected;
  if (auto problem = read_expected(reference_path, buffers, expected); !problem.empty()) return reply(failure(problem));
  runner->keep_expected(request, expected);
  bool device_failed = false;
  return reply(measure_loaded(*runner, buffers, expected, request, marks, device_failed));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--resident") == 0) return run_resident();
  if (argc == 6 && std::strcmp(argv[1], "--nvrtc") == 0) return run_nvrtc_mode(argv[2], argv[3], argv[4], argv[5]);
  if (argc != 2) {
    std::fprintf(stderr,
                 "usage: tune-kernel-worker '<request JSON>' | --resident | --nvrtc LIBRARY ARCH SOURCE CUBIN\n");
    return 2;
  }
  nlohmann::json request;
  try {
    request = nlohmann::json::parse(argv[1]);
  } catch (const std::exception& e) {
    return reply(failure(std::string("bad request: ") + e.what()));
  }
  pin(request.value("cores", nlohmann::json::array()));
  limit(request, request.value("device", "cpu"));
  try {
    return measure(request);
  } catch (const std::bad_alloc&) {
    return reply(out_of_memory(request));
  }
}
