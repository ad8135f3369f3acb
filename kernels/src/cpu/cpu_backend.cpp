#include "tune/kernels/cpu_backend.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "compile.hpp"
#include "compiler_huge_pages.hpp"
#include "measurement.hpp"
#include "resident_measurer.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/devices.hpp"
#include "tune/kernels/machine.hpp"
#include "tune/kernels/subprocess.hpp"

// Where the worker lies relative to the folder of the library holding this code
// once installed (../libexec/tune-engine with the GNU layout).
#ifndef TUNE_KERNEL_WORKER_FROM_LIBRARY
#define TUNE_KERNEL_WORKER_FROM_LIBRARY "../libexec/tune-engine"
#endif
// A static library is part of a program built anywhere: it falls back on the
// worker's build path (shared builds find it beside the library instead).
#ifndef TUNE_KERNEL_WORKER_PATH
#define TUNE_KERNEL_WORKER_PATH "tune-kernel-worker"
#endif

namespace tune {

namespace fs = std::filesystem;

std::string kernel_cache_dir(const task_backend_options& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (const char* dir = std::getenv("TUNE_CACHE_DIR"); dir && *dir) return dir;
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir) return std::string(dir) + "/tune-engine";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tune-engine";
  return (fs::temp_directory_path() / "tune-engine-cache").string();
}

std::vector<std::string> cpu_kernel_flags(const kernel_program& program, const configuration& config) {
  std::vector<std::string> flags{"-O3", "-march=native", "-fno-math-errno"};
  if (program.flags) {
    auto extra = program.flags(config);
    flags.insert(flags.end(), extra.begin(), extra.end());
  }
  return flags;
}

std::vector<std::string> kernel_worker_candidates(const std::string& library_dir) {
  const fs::path dir(library_dir);
  return {(dir / TUNE_KERNEL_WORKER_FROM_LIBRARY / "tune-kernel-worker").lexically_normal().string(),
          (dir / ".." / "bin" / "tune-kernel-worker").lexically_normal().string(),
          (dir / "tune-kernel-worker").string()};
}

std::string kernel_worker_path(const task_backend_options& options) {
  if (!options.worker_path.empty()) return options.worker_path;
  if (const char* path = std::getenv("TUNE_KERNEL_WORKER"); path && *path) return path;
  std::error_code ec;
  std::vector<std::string> candidates;
  // The library's own file: libtune_kernels.so when shared, the program when static.
  Dl_info library{};
  if (::dladdr(reinterpret_cast<void*>(&kernel_worker_candidates), &library) && library.dli_fname &&
      *library.dli_fname) {
    auto file = fs::weakly_canonical(fs::path(library.dli_fname), ec);
    if (!ec) candidates = kernel_worker_candidates(file.parent_path().string());
  }
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((self.parent_path() / "tune-kernel-worker").string());
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate, ec)) return candidate;
  return TUNE_KERNEL_WORKER_PATH;
}

namespace {

struct compiler_facts {
  std::string identity;  // the canonical path and the first line of --version
  bool gcc = false;
};

compiler_facts facts_of(const std::string& compiler) {
  static std::mutex mutex;
  static std::map<std::string, compiler_facts> known;
  std::lock_guard lock(mutex);
  auto it = known.find(compiler);
  if (it != known.end()) return it->second;
  int missing = 0;
  std::string path = find_program(compiler, missing);
  if (missing == 0) {
    std::error_code ec;
    auto canonical = fs::canonical(path, ec);  // g++ and g++-12 are one compiler
    if (!ec) path = canonical.string();
  }
  auto version = run_process({compiler, "--version"}, 30.0);
  std::string first_line = version.output.substr(0, version.output.find('\n'));
  bool gcc = version.ok() && version.output.find("Free Software Foundation") != std::string::npos &&
             version.output.find("clang") == std::string::npos;
  return known[compiler] = {path + " " + first_line, gcc};
}

std::string compiler_identity(const std::string& compiler) { return facts_of(compiler).identity; }

std::vector<std::string> shared_object_flags() { return {"-std=c++20", "-fPIC", "-shared"}; }

nlohmann::json arguments_json(const kernel_program& program) {
  auto list = nlohmann::json::array();
  for (const auto& a : program.arguments) {
    list.push_back({{"type", to_string(a.type)}, {"size", a.size}, {"output", a.output}, {"value", a.value}});
    if (!a.data.empty()) list.back()["data"] = a.data;
  }
  return list;
}

}  // namespace

bool compiler_is_gcc(const std::string& compiler) { return facts_of(compiler).gcc; }

std::vector<std::string> cpu_build_flags(const kernel_program& program, const configuration& config,
                                         const std::string& compiler) {
  auto flags = shared_object_flags();
  auto kernel_flags = cpu_kernel_flags(program, config);
  flags.insert(flags.end(), kernel_flags.begin(), kernel_flags.end());
  if (!program.gcc_build_flags.empty() && compiler_is_gcc(compiler))
    flags.insert(flags.end(), program.gcc_build_flags.begin(), program.gcc_build_flags.end());
  return flags;
}

build_result compile_shared_object(const task_backend_options& options, const std::string& compiler,
                                   const std::string& source, const std::string& source_extension,
                                   const std::vector<std::string>& flags, double timeout_s) {
  compile_cache cache(fs::path(kernel_cache_dir(options)) / "cpu", ".so");
  const std::string identity = compiler_identity(compiler);
  std::vector<std::string> key_parts{source, identity};
  key_parts.insert(key_parts.end(), flags.begin(), flags.end());
  fs::path cpp = fs::path(cache.artifact_path(key_parts)).replace_extension(source_extension);
  return cache.fetch(key_parts, [&](const fs::path& so) {
    build_result out{status::compile_error, {}, 0.0, {}};
    if (auto problem = compile_cache::write_file(cpp, source); !problem.empty()) {
      out.message = problem;
      return out;
    }
    // The compiler's memory on huge pages (compiler_huge_pages.hpp): the same
    // output, fewer page faults.
    auto environment = options.compiler_huge_pages
                           ? huge_pages_environment(huge_pages_preload(cache, compiler, identity, timeout_s),
                                                    std::getenv("LD_PRELOAD"), std::getenv("GLIBC_TUNABLES"))
                           : std::vector<std::string>{};
    return build_shared_object(compiler, flags, cpp.string(), so.string(), timeout_s, environment);
  });
}

run_result run_worker(const std::string& worker, const std::string& request, double timeout_s, int max_processes) {
  run_result out;
  auto result = run_process({worker, request}, timeout_s, 64 * 1024, process_limits{max_processes});
  out.run_s = result.seconds;
  if (!result.started) {
    out.state = status::runtime_error;
    out.message = result.error;
    return out;
  }
  if (result.timed_out) {
    out.state = status::run_timeout;
    out.message = "kernel killed after " + std::to_string(timeout_s) + " s";
    return out;
  }
  // A fork bomb cut at the limit ends however the kernel takes its failed
  // forks: say why.
  std::string limit_note =
      result.process_limit_reached
          ? " after reaching its limit of " + std::to_string(max_processes) + " processes and threads (max_processes)"
          : "";
  if (result.signal != 0) {
    out.state = status::runtime_error;
    out.message = std::string("kernel crashed: signal ") + std::to_string(result.signal) + " (" +
                  ::strsignal(result.signal) + ")" + limit_note;
    return out;
  }
  // The reply is the last line that parses as JSON (a kernel may print).
  std::stringstream lines(result.output);
  std::string line;
  nlohmann::json reply;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '{') continue;
    try {
      reply = nlohmann::json::parse(line);
    } catch (const std::exception&) {
    }
  }
  if (!reply.is_object()) {
    out.state = status::runtime_error;
    out.message = "worker exited with code " + std::to_string(result.exit_code) + limit_note +
                  " and no reply: " + result.output.substr(0, 2000);
    return out;
  }
  read_reply(reply, out);
  if (out.state != status::ok) out.message += limit_note;
  return out;
}

reference_outputs prepare_reference(const kernel_program& program, const task_backend_options& options,
                                    double timeout_s) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  reference_outputs ref;
  auto args = arguments_json(program).dump();
  std::vector<std::string> flags{"-std=c++20", "-O2", "-fPIC", "-shared", "-pthread"};
  auto compiled = compile_shared_object(options, options.compiler, program.reference_source, ".cpp", flags, timeout_s);
  if (compiled.state != status::ok) {
    ref.message = "reference does not compile: " + compiled.message;
    return ref;
  }
  compile_cache outputs(fs::path(kernel_cache_dir(options)) / "cpu", ".ref");
  auto computed = outputs.fetch({compiled.artifact, program.reference_entry, args}, [&](const fs::path& file) {
    nlohmann::json request{{"mode", "reference"},
                           {"memory_limit_mb", options.memory_limit_mb},
                           {"library", compiled.artifact},
                           {"entry", program.reference_entry},
                           {"arguments", nlohmann::json::parse(args)},
                           {"reference", file.string()}};
    auto result = run_worker(kernel_worker_path(options), request.dump(), timeout_s, options.max_processes);
    return build_result{result.state, {}, result.run_s, result.message};
  });
  if (computed.state != status::ok) {
    ref.message = "reference run failed (" + std::string(to_string(computed.state)) + "): " + computed.message;
    return ref;
  }
  ref.path = computed.artifact;
  return ref;
}

std::optional<build_result> instantiation_failure(const kernel_program& program, const configuration& config) {
  build_result out;
  out.state = status::instantiation_error;
  if (!program.space->is_valid(config)) {
    out.message = "configuration is not in the search space";
    return out;
  }
  if (program.check) out.message = program.check(config);
  if (!out.message.empty()) return out;
  return std::nullopt;
}

measurement_plan plan_measurement(const kernel_program& program, const task_backend_options& options,
                                  const build_result& build) {
  measurement_plan plan;
  if (build.state != status::ok) {
    run_result out;
    out.state = build.state;
    out.message = "not built: " + build.message;
    plan.failure = out;
    return plan;
  }
  auto ref = program.expected_file.empty() ? prepare_reference(program, options)
                                           : reference_outputs{program.expected_file, {}};
  if (ref.path.empty()) {
    run_result out;
    out.state = status::runtime_error;
    out.message = ref.message;
    plan.failure = out;
    return plan;
  }
  double memory_mb = options.memory_limit_mb;
  if (!(memory_mb > 0))
    memory_mb = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE)) /
                (2.0 * 1024.0 * 1024.0);
  plan.request = {{"mode", "measure"},
                  {"memory_limit_mb", memory_mb},
                  {"library", build.artifact},
                  {"entry", program.entry},
                  {"prepare", program.prepare},
                  {"finish", program.finish},
                  {"arguments", arguments_json(program)},
                  {"reference", ref.path},
                  {"tolerance", program.tolerance > 0 ? program.tolerance : options.tolerance},
                  {"absolute_tolerance", program.absolute_tolerance},
                  {"reported_time", program.reported_time},
                  {"min_time_s", options.measurement.min_time_s},
                  {"min_repeats", options.measurement.min_repeats},
                  {"max_repeats", options.measurement.max_repeats},
                  {"statistic", to_string(options.measurement.statistic)}};
  return plan;
}

namespace {

// A configuration of a CPU kernel program compiled into a shared object.
build_result build_cpu_program(const kernel_program& program, const task_backend_options& options,
                               const configuration& config, double timeout_s) {
  if (auto failed = instantiation_failure(program, config)) return *failed;
  build_result out;
  std::string source;
  try {
    source = program.source(config);
  } catch (const std::exception& e) {
    out.state = status::instantiation_error;
    out.message = e.what();
    return out;
  }
  return compile_shared_object(options, options.compiler, source, ".cpp",
                               cpu_build_flags(program, config, options.compiler), timeout_s);
}

}  // namespace

run_result run_cpu_program_once(const kernel_program& program, const task_backend_options& options,
                                const configuration& config, const std::string& arrays_path, double timeout_s) {
  auto built = build_cpu_program(program, options, config, timeout_s);
  if (built.state != status::ok) {
    run_result out;
    out.state = built.state;
    out.message = built.message;
    return out;
  }
  nlohmann::json request{
      {"mode", "run"},          {"memory_limit_mb", options.memory_limit_mb}, {"library", built.artifact},
      {"entry", program.entry}, {"arguments", arguments_json(program)},       {"reference", arrays_path}};
  return run_worker(kernel_worker_path(options), request.dump(), timeout_s, options.max_processes);
}

namespace {

class cpu_backend final : public backend {
 public:
  cpu_backend(kernel_program_ptr program, task_backend_options options)
      : program_(std::move(program)), options_(std::move(options)) {
    if (options_.threads < 1) throw std::invalid_argument("threads must be at least 1");
  }

  std::string name() const override { return "cpu"; }
  std::string task_key() const override { return program_->key; }
  std::string device_kind() const override {
    return "cpu:" + cpu_model_name() + ":threads=" + std::to_string(options_.threads);
  }
  search_space_ptr space() const override { return program_->space; }

  build_result build(const configuration& config, double timeout_s) override {
    return build_cpu_program(*program_, options_, config, timeout_s);
  }

  // Measured by the device's resident process (started on its first run),
  // or, with options.resident_measurer off, by a worker process of its own
  // in full.
  run_result run(const configuration&, const build_result& build, int device, const run_limits& limits) override {
    auto plan = plan_measurement(*program_, options_, build);
    if (plan.failure) return *plan.failure;
    on_device(plan.request, device);
    if (!options_.resident_measurer)
      return run_worker(kernel_worker_path(options_), plan.request.dump(), limits.timeout_s, options_.max_processes);
    return measurers_.device(device, options_).measure(std::move(plan.request), limits);
  }

  // In one child of the device's resident process, every configuration
  // loaded side by side and each round a short burst of each in turn, so the
  // entries are compared on runs milliseconds apart (the default measures
  // each in full, a process each, seconds apart).
  interleaved_times run_interleaved(const std::vector<std::pair<configuration, build_result>>& entries, int device,
                                    int rounds, double timeout_s) override {
    if (!options_.resident_measurer || entries.empty() || rounds < 1)
      return backend::run_interleaved(entries, device, rounds, timeout_s);
    interleaved_times out;
    auto libraries = nlohmann::json::array();
    for (std::size_t e = 0; e < entries.size(); ++e) {
      auto plan = plan_measurement(*program_, options_, entries[e].second);
      if (plan.failure) {
        out.state = plan.failure->state;
        out.message = "entry " + std::to_string(e) + ": " + plan.failure->message;
        return out;
      }
      libraries.push_back(entries[e].second.artifact);
    }
    auto plan = plan_measurement(*program_, options_, entries.front().second);
    auto& request = plan.request;
    request.erase("library");
    request["mode"] = "interleave";
    request["libraries"] = std::move(libraries);
    request["rounds"] = rounds;
    on_device(request, device);
    // Each entry's checked run and its bursts, each within the run timeout.
    run_limits limits(timeout_s * static_cast<double>(entries.size()) * (1.0 + rounds));
    limits.early_stop = early_stop_policy::off();
    nlohmann::json reply;
    auto result = measurers_.device(device, options_).measure(std::move(request), limits, &reply);
    if (result.state != status::ok) {
      out.state = result.state;
      out.message = result.message;
      return out;
    }
    const auto& rounds_ms = reply.contains("rounds_ms") ? reply["rounds_ms"] : nlohmann::json();
    bool shaped = rounds_ms.is_array() && rounds_ms.size() == entries.size();
    for (std::size_t e = 0; shaped && e < entries.size(); ++e) {
      shaped = rounds_ms[e].is_array() && rounds_ms[e].size() == static_cast<std::size_t>(rounds);
      std::vector<double> times;
      for (std::size_t r = 0; shaped && r < rounds_ms[e].size(); ++r) {
        shaped = rounds_ms[e][r].is_number() && rounds_ms[e][r].get<double>() > 0;
        if (shaped) times.push_back(rounds_ms[e][r].get<double>());
      }
      out.time_ms.push_back(std::move(times));
    }
    if (!shaped) {
      out = {};
      out.state = status::unknown;
      out.message = "the measuring process's interleaved reply is malformed: " + reply.dump().substr(0, 200);
    }
    return out;
  }

  std::vector<std::string> device_resources(int device) const override {
    std::vector<std::string> out;
    for (int core : device_cores(device)) out.push_back("cpu-core-" + std::to_string(core));
    return out;
  }

  std::vector<int> measuring_cores(int device) const override { return device_cores(device); }

 private:
  /// The cores measuring on `device` runs on.
  std::vector<int> device_cores(int device) const {
    std::vector<int> cores;
    for (int t = 0; t < options_.threads; ++t) cores.push_back(options_.first_core + device * options_.threads + t);
    return cores;
  }

  /// The device's cores, and whether and how far to flush the caches before
  /// each timed run (measurement_protocol::flush_cache: the last-level cache
  /// of the device's first core).
  void on_device(nlohmann::json& request, int device) const {
    nlohmann::json cores = device_cores(device);
    if (options_.measurement.flush_cache) {
      request["flush_cache"] = true;
      request["cache_bytes"] = last_level_cache_bytes(cores.front().get<int>());
    }
    request["cores"] = std::move(cores);
  }

  kernel_program_ptr program_;
  task_backend_options options_;
  resident_measurers measurers_{resident_measurer::kind::cpu};
};

}  // namespace

backend_ptr make_cpu_backend(kernel_program_ptr program, const task_backend_options& options) {
  return std::make_shared<cpu_backend>(std::move(program), options);
}

}  // namespace tune
