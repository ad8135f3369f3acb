// Vendor kernels timed by tune-vendor-worker (vendor_reference.hpp).
#include "tune/kernels/vendor_reference.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

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
  nlohmann::json r = {{"flops", t.flops()}, {"batch", t.batch}};
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

vendor_figure measure(const std::string& worker, nlohmann::json request, const vendor_options& o) {
  vendor_figure f{request["library"], request["variant"]};
  if (std::error_code ec; !fs::exists(worker, ec)) {
    f.note = "tune-vendor-worker not found at " + worker;
    return f;
  }
  request.update({{"threads", o.threads}, {"first_core", o.first_core}, {"min_time_s", o.min_time_s}});
  auto result = run_process({worker, request.dump()}, o.timeout_s);
  if (!result.started) {
    f.note = "cannot run " + worker + ": " + result.error;
    return f;
  }
  if (result.timed_out) {
    f.note = "timed out after " + std::to_string(o.timeout_s) + " s";
    return f;
  }
  // The reply is the last line of the output.
  auto text = result.output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  auto reply = nlohmann::json::parse(text.substr(text.find_last_of('\n') + 1), nullptr, false);
  if (reply.is_object() && reply.contains("gflops") && reply["gflops"].is_number()) {
    f.gflops = reply["gflops"];
    f.detail = reply.value("detail", "");
  } else if (reply.is_object() && reply.contains("error")) {
    f.note = reply["error"].get<std::string>();
  } else {
    f.note = "the worker ended without a figure (exit " + std::to_string(result.exit_code) + ", signal " +
             std::to_string(result.signal) + ")";
  }
  return f;
}

}  // namespace

std::vector<vendor_figure> vendor_figures(const task_spec& task, const vendor_options& options) {
  const std::string worker = vendor_worker_path(options);
  auto request = [&](const char* library, const std::string& variant) {
    auto r = problem(task);
    r.update({{"library", library}, {"variant", variant}});
    return r;
  };
  std::vector<vendor_figure> out;
  if (task.op == operator_kind::conv2d) {
    out.push_back(measure(worker, request("onednn", "own layouts"), options));
    out.push_back(measure(worker, request("onednn", "plain"), options));
    out.push_back({"openblas", "default", 0.0, "", "no BLAS equivalent of a convolution"});
    return out;
  }
  out.push_back(measure(worker, request("onednn", "plain"), options));
  out.push_back(measure(worker, request("openblas", "default"), options));
  if (auto core = openblas_fastest_coretype(); !core.empty())
    out.push_back(measure(worker, request("openblas", core), options));
  return out;
}

const vendor_figure* best_vendor(const std::vector<vendor_figure>& figures) {
  const vendor_figure* best = nullptr;
  for (const auto& f : figures)
    if (f.available() && (!best || f.gflops > best->gflops)) best = &f;
  return best;
}

}  // namespace tune
