// Vendor kernels timed by tune-vendor-worker (vendor_reference.hpp).
#include "tune/kernels/vendor_reference.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tune/engine/median.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/subprocess.hpp"

namespace tune {

namespace fs = std::filesystem;

std::string openblas_fastest_coretype() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
#endif
  return "";
}

std::string vendor_worker_path(const vendor_options& options) {
  if (!options.worker_path.empty()) return options.worker_path;
  if (const char* path = std::getenv("TUNE_VENDOR_WORKER"); path && *path) return path;
  return (fs::path(kernel_worker_path({})).parent_path() / "tune-vendor-worker").string();
}

namespace {

nlohmann::json problem(const task_spec& t) {
  nlohmann::json r = {{"batch", t.batch}};
  if (t.op == operator_kind::conv2d) {
    r.update({{"op", "conv2d"},
              {"in_channels", t.in_channels},
              {"height", t.height},
              {"width", t.width},
              {"out_channels", t.out_channels},
              {"kernel_h", t.kernel_h},
              {"kernel_w", t.kernel_w},
              {"stride", t.stride},
              {"pad", t.pad}});
  } else {
    r.update({{"op", t.op == operator_kind::matmul ? "matmul" : "batch_matmul"},
              {"n", t.n},
              {"k", t.k},
              {"m", t.m},
              {"transpose_a", t.transpose_a},
              {"transpose_b", t.transpose_b}});
  }
  return r;
}

nlohmann::json tuned_json(const tuned_kernel_ref& t) {
  auto arguments = nlohmann::json::array();
  for (const auto& a : t.arguments)
    arguments.push_back({{"type", to_string(a.type)}, {"size", a.size}, {"output", a.output}, {"value", a.value}});
  return {{"library", t.library},
          {"entry", t.entry},
          {"prepare", t.prepare},
          {"finish", t.finish},
          {"arguments", arguments}};
}

double median_of(const std::vector<vendor_round>& rounds, double vendor_round::*side) {
  std::vector<double> times;
  for (const auto& r : rounds) times.push_back(r.*side);
  return spread_of(times).median;
}

// The rounds of the reply's list; empty (with `why`) when one is malformed.
std::vector<vendor_round> read_rounds(const nlohmann::json& list, std::string& why) {
  std::vector<vendor_round> out;
  for (const auto& r : list) {
    vendor_round round;
    try {
      round = {r.at("tuned_s").get<double>(), r.at("vendor_s").get<double>(), r.at("tuned_at_s").get<double>(),
               r.at("vendor_at_s").get<double>()};
    } catch (const std::exception& e) {
      why = std::string("a malformed round in the worker's reply: ") + e.what();
      return {};
    }
    if (!(round.tuned_s > 0) || !(round.vendor_s > 0)) {
      why = "the worker's reply has a round without a positive time";
      return {};
    }
    out.push_back(round);
  }
  if (out.empty()) why = "the worker's reply has no rounds";
  return out;
}

vendor_result measure(const std::string& worker, nlohmann::json request, const vendor_options& o, double flops) {
  vendor_result v;
  v.library = request["library"];
  v.variant = request["variant"];
  if (std::error_code ec; !fs::exists(worker, ec)) {
    v.note = "tune-vendor-worker not found at " + worker;
    return v;
  }
  request.update(
      {{"threads", o.threads}, {"first_core", o.first_core}, {"rounds", o.rounds}, {"min_time_s", o.min_time_s}});
  auto result = run_process({worker, request.dump()}, o.timeout_s);
  if (!result.started) {
    v.note = "cannot run " + worker + ": " + result.error;
    return v;
  }
  if (result.timed_out) {
    v.note = "timed out after " + std::to_string(o.timeout_s) + " s";
    return v;
  }
  // The reply is the last line of the output.
  auto text = result.output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  auto reply = nlohmann::json::parse(text.substr(text.find_last_of('\n') + 1), nullptr, false);
  if (reply.is_object() && reply.contains("rounds") && reply["rounds"].is_array()) {
    v.rounds = read_rounds(reply["rounds"], v.note);
    v.detail = reply.value("detail", "");
  } else if (reply.is_object() && reply.contains("error")) {
    v.note = reply["error"].get<std::string>();
  } else {
    v.note = "the worker ended without a reply (exit " + std::to_string(result.exit_code) + ", signal " +
             std::to_string(result.signal) + ")";
  }
  v.summarize(flops);
  return v;
}

}  // namespace

spread spread_of(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  return {tune::sorted_median(values), values.front(), values.back()};
}

void vendor_result::summarize(double flops) {
  if (rounds.empty()) return;
  std::vector<double> ratios;
  for (const auto& r : rounds) ratios.push_back(r.ratio());
  ratio = spread_of(ratios);
  vendor_gflops = flops / median_of(rounds, &vendor_round::vendor_s) / 1e9;
  tuned_gflops = flops / median_of(rounds, &vendor_round::tuned_s) / 1e9;
}

tuned_kernel_ref cpu_tuned_kernel(const task_spec& task, int threads, backend& cpu, const configuration& config,
                                  double timeout_s) {
  if (cpu.name() != "cpu")
    throw std::invalid_argument("the tuned kernel runs on " + cpu.name() +
                                ": the vendor libraries are timed beside a CPU kernel only");
  auto built = cpu.build(config, timeout_s);
  if (built.state != status::ok)
    throw std::runtime_error("the tuned configuration does not build (" + std::string(to_string(built.state)) +
                             "): " + built.message);
  auto program = make_cpu_task_program(task, threads);
  return {built.artifact, program->entry, program->prepare, program->finish, program->arguments};
}

vendor_comparison compare_with_vendors(const task_spec& task, const tuned_kernel_ref& tuned,
                                       const vendor_options& options) {
  if (tuned.library.empty())
    throw std::invalid_argument("vendor comparison: no tuned kernel (its shared object) given");
  if (std::error_code ec; !fs::is_regular_file(tuned.library, ec))
    throw std::invalid_argument("vendor comparison: the tuned kernel " + tuned.library +
                                " does not exist (build the configuration first: its build_result::artifact)");
  if (options.rounds < 1)
    throw std::invalid_argument("vendor comparison: rounds must be at least 1, not " + std::to_string(options.rounds));
  const std::string worker = vendor_worker_path(options);
  auto request = [&](const char* library, const std::string& variant) {
    auto r = problem(task);
    r.update({{"library", library}, {"variant", variant}, {"tuned", tuned_json(tuned)}});
    return r;
  };
  vendor_comparison out;
  auto& v = out.vendors;
  if (task.op == operator_kind::conv2d) {
    v.push_back(measure(worker, request("onednn", "own layouts"), options, task.flops()));
    v.push_back(measure(worker, request("onednn", "plain"), options, task.flops()));
    vendor_result none;
    none.library = "openblas";
    none.variant = "default";
    none.note = "no BLAS equivalent of a convolution";
    v.push_back(none);
  } else {
    v.push_back(measure(worker, request("onednn", "plain"), options, task.flops()));
    v.push_back(measure(worker, request("openblas", "default"), options, task.flops()));
    if (auto core = openblas_fastest_coretype(); !core.empty())
      v.push_back(measure(worker, request("openblas", core), options, task.flops()));
  }
  std::vector<vendor_round> all;
  for (const auto& r : v) all.insert(all.end(), r.rounds.begin(), r.rounds.end());
  if (!all.empty()) out.tuned_gflops = task.flops() / median_of(all, &vendor_round::tuned_s) / 1e9;
  return out;
}

const vendor_result* vendor_comparison::best() const {
  const vendor_result* best = nullptr;
  for (const auto& v : vendors)
    if (v.available() && (!best || v.ratio.median < best->ratio.median)) best = &v;
  return best;
}

}  // namespace tune
