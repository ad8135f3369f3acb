#include "program_mode.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tune/engine/limits.hpp"
#include "tune/engine/median.hpp"

namespace {
using program_entry = void (*)(const float*, const int*, int, int, float*, float*);

int answer(const nlohmann::json& reply) {
  std::printf("%s\n", reply.dump().c_str());
  std::fflush(stdout);
  return 0;
}

int run_failure(const std::string& message) { return answer({{"status", "runtime_error"}, {"message", message}}); }

template <class T>
bool read_values(std::ifstream& in, std::vector<T>& values, std::size_t count) {
  values.resize(count);
  return static_cast<bool>(
      in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(T))));
}

// Writes the values to `path` through a temporary file and a rename; returns
// what went wrong, or nothing.
template <class T>
std::string write_atomically(const std::string& path, const std::vector<T>& values) {
  std::ofstream out(path + ".tmp", std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
  out.close();
  if (!out || std::rename((path + ".tmp").c_str(), path.c_str()) != 0) return "cannot write " + path;
  return {};
}
}  // namespace

nlohmann::json time_statistics(std::vector<double> times_ms, const nlohmann::json& request) {
  nlohmann::json runs = times_ms;  // in the order they ran
  std::sort(times_ms.begin(), times_ms.end());
  const auto statistic =
      tune::time_statistic_from_string(request.value("statistic", "median")).value_or(tune::time_statistic::median);
  return {{"time_ms", tune::statistic_of(times_ms, statistic)},
          {"median_ms", tune::sorted_median(times_ms)},
          {"min_ms", times_ms.front()},
          {"statistic", tune::to_string(statistic)},
          {"times_ms", std::move(runs)}};
}

int run_program_mode(const nlohmann::json& request) {
  std::string library = request.value("library", "");
  std::string entry_name = request.value("entry", "");
  std::size_t param_count = request.value("params", 0u);
  int classes = request.value("classes", 10);
  auto inputs_path = request.value("inputs", "");
  std::ifstream inputs(inputs_path, std::ios::binary);
  std::int32_t header[3] = {0, 0, 0};  // n_train, n_eval, has_labels
  if (!inputs || !inputs.read(reinterpret_cast<char*>(header), sizeof header) || header[0] < 0 || header[1] <= 0 ||
      classes < 2)
    return run_failure("cannot read the inputs file " + inputs_path + " or its header is out of range");
  int n_train = header[0], n_test = header[1];
  bool has_labels = header[2] != 0;
  std::vector<float> x;
  std::vector<std::int32_t> y;
  if (!read_values(inputs, x, static_cast<std::size_t>(n_train + n_test) * 64) ||
      (has_labels && !read_values(inputs, y, static_cast<std::size_t>(n_train))))
    return run_failure("the inputs file " + inputs_path + " is shorter than its header says");
  std::vector<float> initial(param_count, 0.0f);
  if (request.contains("params_in")) {
    std::ifstream in(request["params_in"].get<std::string>(), std::ios::binary);
    if (!in || !read_values(in, initial, param_count))
      return run_failure("cannot read " + std::to_string(param_count) + " parameters from " +
                         request["params_in"].get<std::string>());
  }
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return run_failure(std::string("dlopen: ") + dlerror());
  auto entry = reinterpret_cast<program_entry>(dlsym(handle, entry_name.c_str()));
  if (!entry) return run_failure("entry '" + entry_name + "' not found in " + library);

  std::vector<float> params;
  std::vector<float> scores;
  auto run_once = [&] {
    params = initial;
    scores.assign(static_cast<std::size_t>(n_test) * classes, std::nanf(""));
    auto start = std::chrono::steady_clock::now();
    entry(x.data(), has_labels ? y.data() : nullptr, n_train, n_test, params.data(), scores.data());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> times{run_once()};
  for (float s : scores)
    if (!std::isfinite(s)) return answer({{"status", "wrong_answer"}, {"message", "a score is not finite"}});
  std::vector<std::int32_t> predicted(static_cast<std::size_t>(n_test));
  for (int k = 0; k < n_test; ++k) {
    const float* row = scores.data() + static_cast<std::size_t>(k) * classes;
    predicted[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(std::max_element(row, row + classes) - row);
  }
  if (request.contains("predictions_out")) {
    if (auto problem = write_atomically(request["predictions_out"].get<std::string>(), predicted); !problem.empty())
      return run_failure(problem);
  }
  if (request.contains("params_out")) {
    if (auto problem = write_atomically(request["params_out"].get<std::string>(), params); !problem.empty())
      return run_failure(problem);
  }
  double min_time = request.value("min_time_s", 0.05);
  int min_repeats = request.value("min_repeats", 3), max_repeats = request.value("max_repeats", 1000);
  double total = times[0] * 1e-3;
  while (static_cast<int>(times.size()) < max_repeats &&
         (static_cast<int>(times.size()) < min_repeats || total < min_time)) {
    times.push_back(run_once());
    total += times.back() * 1e-3;
  }
  auto reply = time_statistics(times, request);
  // Every run is timed here, the first (whose scores are checked) included.
  double kernel_ms = 0.0;
  for (double t : times) kernel_ms += t;
  reply.update({{"status", "ok"}, {"repeats", times.size()}, {"kernel_s", kernel_ms * 1e-3}});
  return answer(reply);
}
