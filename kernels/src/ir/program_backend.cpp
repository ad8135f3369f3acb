#include "tune/kernels/program_backend.hpp"

#include <dlfcn.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "../cpu/measure_rules.hpp"
#include "../cpu/measurement.hpp"
#include "../cpu/resident_measurer.hpp"
#include "tune/engine/median.hpp"
#include "tune/engine/text.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/devices.hpp"
#include "tune/kernels/subprocess.hpp"

namespace fs = std::filesystem;

namespace tune {

namespace {
constexpr int fcnet_params = 64 * 32 + 32 + 32 * 10 + 10;
constexpr int cnn_params = 4 * 9 + 4 + 36 * 10 + 10;  // kernels/workloads/cnn.c: CNN_PARAMS
constexpr int digit_pixels = 64;

struct workload_spec {
  std::string name;
  std::string ir_file;
  std::vector<std::string> functions;  // edited
  std::string entry;
  std::string train_entry;  // prediction: what trains the parameters it predicts with; empty for training
  int params = 0;           // floats of parameters
};

constexpr const char* matmul_prefix = "matmul:";

const std::vector<workload_spec>& workloads() {
  static const std::vector<workload_spec> all = {
      {"2fcnet:predict",
       "fcnet.ll",
       {"fcnet_predict", "fcnet_predict_all"},
       "fcnet_predict",
       "fcnet_train",
       fcnet_params},
      {"2fcnet:train", "fcnet.ll", {"fcnet_train"}, "fcnet_train", "", fcnet_params},
      {"cnn:predict", "cnn.ll", {"cnn_predict", "cnn_forward"}, "cnn_predict", "cnn_train", cnn_params},
      {"cnn:train", "cnn.ll", {"cnn_train", "cnn_forward"}, "cnn_train", "", cnn_params},
  };
  return all;
}

// Where a workload's file is: $`variable` if set, else the first of the
// install (<datadir>/tune-engine/`installed`, found from this library's or
// the program's file) and the build or source tree (`built`) that holds `file`.
fs::path find_data_dir(const char* variable, const char* installed, const char* built, const std::string& file) {
  if (const char* value = std::getenv(variable); value && *value) return value;
  std::vector<fs::path> candidates;
  std::error_code ec;
  Dl_info library{};
  if (::dladdr(reinterpret_cast<void*>(&find_data_dir), &library) && library.dli_fname && *library.dli_fname) {
    auto path = fs::weakly_canonical(fs::path(library.dli_fname), ec);
    if (!ec) candidates.push_back((path.parent_path() / TUNE_GEVO_FROM_LIBRARY / installed).lexically_normal());
  }
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((self.parent_path() / TUNE_GEVO_FROM_PROGRAM / installed).lexically_normal());
  candidates.push_back(built);
  std::string looked;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& dir = candidates[i];
    if (fs::is_regular_file(dir / file, ec)) return dir;
    if (std::find(candidates.begin(), candidates.begin() + i, dir) == candidates.begin() + i)
      looked += (looked.empty() ? "" : ", ") + dir.string();
  }
  throw std::runtime_error("GEVO workload file " + file + " not found (looked in " + looked + "); set $" + variable +
                           " to the folder that holds it");
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string_view to_string(digits_split split) {
  switch (split) {
    case digits_split::search:
      return "search";
    case digits_split::validation:
      return "validation";
    case digits_split::test:
      return "test";
  }
  return "?";
}

const digits_set& digits_data::split(digits_split which) const {
  switch (which) {
    case digits_split::search:
      return search;
    case digits_split::validation:
      return validation;
    case digits_split::test:
      return test;
  }
  throw std::invalid_argument("digits_data::split: not a split");
}

digits_data read_digits(const std::filesystem::path& csv_gz) {
  gzFile in = gzopen(csv_gz.c_str(), "rb");
  if (!in) throw std::runtime_error("cannot read " + csv_gz.string());
  digits_data out;
  digits_set* held_out[] = {&out.search, &out.validation, &out.test};
  char line[1024];
  int row = 0, held = 0;
  while (gzgets(in, line, sizeof line)) {
    std::vector<float> pixels;
    std::stringstream fields(line);
    std::string field;
    while (std::getline(fields, field, ',')) pixels.push_back(std::stof(field));
    if (pixels.size() != digit_pixels + 1) {
      gzclose(in);
      throw std::runtime_error(csv_gz.string() + ":" + std::to_string(row + 1) + ": expected 65 numbers");
    }
    auto label = static_cast<std::int32_t>(pixels.back());
    pixels.pop_back();
    for (auto& p : pixels) p /= 16.0f;
    auto& set = row % 5 == 4 ? *held_out[held++ % 3] : out.train;
    set.pixels.insert(set.pixels.end(), pixels.begin(), pixels.end());
    set.labels.push_back(label);
    ++row;
  }
  gzclose(in);
  return out;
}

namespace {
// Writes the worker's inputs file of one split (program_mode.hpp): the
// training images and labels when `with_training`, then the split's images,
// never their labels.
void write_inputs(const digits_data& digits, digits_split split, bool with_training, const fs::path& out) {
  const auto& eval = digits.split(split);
  std::string bytes;
  auto put = [&bytes](const void* data, std::size_t size) { bytes.append(static_cast<const char*>(data), size); };
  std::int32_t header[3] = {with_training ? static_cast<std::int32_t>(digits.train.labels.size()) : 0,
                            static_cast<std::int32_t>(eval.labels.size()), with_training ? 1 : 0};
  put(header, sizeof header);
  if (with_training) put(digits.train.pixels.data(), digits.train.pixels.size() * sizeof(float));
  put(eval.pixels.data(), eval.pixels.size() * sizeof(float));
  if (with_training) put(digits.train.labels.data(), digits.train.labels.size() * sizeof(std::int32_t));
  if (auto problem = compile_cache::write_file(out, bytes); !problem.empty()) throw std::runtime_error(problem);
}

const std::vector<std::string>& variant_flags() {
  static const std::vector<std::string> flags = {"-O2", "-march=native", "-fPIC", "-shared", "-Wno-override-module"};
  return flags;
}

class program_backend_impl final : public program_backend {
 public:
  // 2fcnet and cnn: the IR built with the project and the digits.
  program_backend_impl(workload_spec spec, task_backend_options options)
      : spec_(std::move(spec)), options_(std::move(options)), space_(make_edit_list_space(spec_.name)) {
    fs::path ir_dir = find_data_dir("TUNE_GEVO_WORKLOAD_DIR", "gevo", TUNE_GEVO_WORKLOAD_DIR, spec_.ir_file);
    fs::path data_dir = find_data_dir("TUNE_GEVO_DATA_DIR", "digits", TUNE_GEVO_DATA_DIR, "digits.csv.gz");
    auto ir_path = ir_dir / spec_.ir_file;
    program_ = ir_program::parse(read_text(ir_path), spec_.functions, ir_path.string());
    prepare_work_dir();
    write_original();
    auto digits = read_digits(data_dir / "digits.csv.gz");
    // Training programs get the training images and labels; prediction
    // programs the images to predict only. The labels those are scored on
    // stay in this process.
    bool training = spec_.train_entry.empty();
    for (auto split : {digits_split::search, digits_split::validation, digits_split::test}) {
      auto& file = inputs_[static_cast<int>(split)];
      file = work_dir_ /
             ("digits-" + std::string(training ? "train-" : "predict-") + std::string(to_string(split)) + ".bin");
      write_inputs(digits, split, training, file);
      labels_[static_cast<int>(split)] = digits.split(split).labels;
    }
    if (!training) train_parameters(digits);
  }

  // matmul: the CPU template's source of one configuration, compiled to IR here.
  program_backend_impl(const task_spec& task, const program_base& base, task_backend_options options)
      : options_(std::move(options)), base_(base) {
    spec_.name = task.to_string();
    kernel_ = make_cpu_task_program(task, 1);
    spec_.entry = kernel_->entry;
    if (base_.configuration_json.empty()) {
      base_.configuration_json = default_matmul_configuration(spec_.name);
      base_.origin = "built-in default";
    }
    configuration config;
    try {
      config = kernel_->space->from_json(base_.configuration_json);
    } catch (const std::exception& e) {
      throw std::invalid_argument(base_.origin + ": not a configuration of " + kernel_->key + ": " + e.what());
    }
    if (auto failed = instantiation_failure(*kernel_, config))
      throw std::invalid_argument(base_.origin + ": configuration of " + kernel_->key +
                                  " cannot be built: " + failed->message);
    base_.configuration_json = kernel_->space->to_json(config);
    space_ = make_edit_list_space(spec_.name);
    prepare_work_dir();
    auto ir = matmul_ir(kernel_->source(config), cpu_kernel_flags(*kernel_, config));
    program_ = ir_program::parse(read_text(ir), {}, ir.string());
    write_original();
  }

  std::string name() const override { return "cpu"; }
  std::string task_key() const override {
    if (!kernel_) return "gevo:" + spec_.name;
    return "gevo:" + spec_.name + "@" + cache_hash({base_.configuration_json}).substr(0, 12);
  }
  std::string device_kind() const override { return "cpu:" + cpu_model_name() + ":clang-14"; }
  search_space_ptr space() const override { return space_; }
  std::shared_ptr<const ir_program> program() const override { return program_; }
  std::string workload() const override { return spec_.name; }
  program_base base() const override { return base_; }

  build_result build(const configuration& config, double timeout_s) override {
    build_result out;
    edit_list edits;
    try {
      edits = decode(config);
    } catch (const std::invalid_argument& e) {
      out.state = status::instantiation_error;
      out.message = e.what();
      return out;
    }
    auto start = std::chrono::steady_clock::now();
    std::string apply_error;
    std::optional<applied_program> applied = take_checked(edits);
    if (!applied) applied = apply_in_worker(edits, timeout_s, apply_error);
    double apply_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!applied) {
      out.state = status::compile_error;
      out.message = apply_error;
      out.compile_s = apply_s;
      return out;
    }
    auto compiled = compile_shared_object(options_, TUNE_CLANG14_PATH, applied->ir, ".ll", variant_flags(), timeout_s);
    compiled.compile_s += apply_s;
    std::ostringstream message;
    message << "applied " << applied->applied << " of " << edits.size() << " edits in " << apply_s << " s";
    for (auto& skipped : applied->skipped) message << "\nskipped edit " << skipped.index << ": " << skipped.reason;
    if (!compiled.message.empty()) message << "\n" << compiled.message;
    compiled.message = message.str();
    return compiled;
  }

  // The result's message starts with the build's (edits applied and skipped).
  // A program's time alone is not its objective (its error is another): it
  // is measured in full, never stopped early or against the best time. Only
  // a measurement that goes on past slow_factor x the median of this
  // backend's measurements that finished (program_slow_limit_s) is stopped,
  // as too_slow: an edit that made a loop endless then costs about a
  // second, not the run timeout (matmul: the run timeout alone).
  run_result run(const configuration&, const build_result& build, int device, const run_limits& limits) override {
    const double timeout_s = limits.timeout_s;
    run_result result;
    bool measured_before = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = measured_.find(build.artifact); it != measured_.end()) {
        result = it->second;
        result.run_s = 0.0;
        result.message = "the same program as an earlier variant: its measurement";
        measured_before = true;
      }
    }
    if (!measured_before) {
      if (kernel_) {
        result = run_matmul(build, device, timeout_s);
      } else {
        double reference_s = std::numeric_limits<double>::quiet_NaN();
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (!measurement_walls_s_.empty()) reference_s = sorted_median(measurement_walls_s_);
        }
        const double limit_s = program_slow_limit_s(timeout_s, limits.early_stop.slow_factor, reference_s);
        result = run_program(build.artifact, device, digits_split::search, limit_s, false);
        if (result.state == status::run_timeout && limit_s < timeout_s) {
          result.state = status::too_slow;
          char text[256];
          std::snprintf(text, sizeof text,
                        "stopped after %.3g s: more than %gx the median of this run's program measurements, %.3g s "
                        "(at least %g s)",
                        result.run_s, limits.early_stop.slow_factor, reference_s, program_min_slow_limit_s);
          result.message = text;
        }
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (!kernel_ && result.state == status::ok)
        measurement_walls_s_.insert(
            std::upper_bound(measurement_walls_s_.begin(), measurement_walls_s_.end(), result.run_s), result.run_s);
      measured_.emplace(build.artifact, result);
    }
    result.message = build.message + (result.message.empty() ? "" : "\n" + result.message);
    return result;
  }

  // Every round measures each program anew (run() keeps one measurement per
  // program): a confirmation times the original and a variant again, in turn.
  interleaved_times run_interleaved(const std::vector<std::pair<configuration, build_result>>& entries, int device,
                                    int rounds, double timeout_s) override {
    return measure_in_turn(entries.size(), rounds, [&](std::size_t e) {
      const auto& build = entries[e].second;
      if (build.state != status::ok) {
        run_result failed;
        failed.state = build.state;
        failed.message = "not built";
        return failed;
      }
      return kernel_ ? run_matmul(build, device, timeout_s)
                     : run_program(build.artifact, device, digits_split::search, timeout_s, false);
    });
  }

  held_out_errors held_out(const configuration& config, double timeout_s) override {
    held_out_errors out;
    if (kernel_) {
      out.message = "a matmul's error is against its reference: it has no held-out data";
      return out;
    }
    auto built = build(config, timeout_s);
    if (built.state != status::ok) {
      out.message = std::string(to_string(built.state)) + ": " + built.message;
      return out;
    }
    for (auto split : {digits_split::validation, digits_split::test}) {
      auto result = run_program(built.artifact, 0, split, timeout_s, true);
      if (result.state != status::ok) {
        out.message =
            std::string(to_string(split)) + ": " + std::string(to_string(result.state)) + ": " + result.message;
        return out;
      }
      (split == digits_split::validation ? out.validation : out.test) = result.objectives[1];
    }
    return out;
  }

  bool edits_apply(const edit_list& edits, double timeout_s) override {
    std::string error;
    auto applied = apply_in_worker(edits, timeout_s, error);
    bool ok = applied && applied->skipped.empty();
    std::lock_guard<std::mutex> lock(mutex_);
    ++checks_.checked;
    if (!ok) ++checks_.refused;
    if (ok) checked_[to_json(edits)] = std::move(*applied);
    return ok;
  }

  check_counts checks() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return checks_;
  }

  std::vector<std::string> device_resources(int device) const override {
    return {"cpu-core-" + std::to_string(measuring_cores(device).front())};
  }

  std::vector<int> measuring_cores(int device) const override {
    return {options_.first_core + device * options_.threads};
  }

 private:
  void prepare_work_dir() {
    worker_ = kernel_worker_path(options_);
    const char* ir_worker = std::getenv("TUNE_IR_WORKER");
    ir_worker_ = ir_worker && *ir_worker ? fs::path(ir_worker) : fs::path(worker_).parent_path() / "tune-ir-worker";
    work_dir_ = fs::path(kernel_cache_dir(options_)) / "gevo";
    fs::create_directories(work_dir_);
  }

  // What edits_apply() applied for this list, once; nothing when it was not asked.
  std::optional<applied_program> take_checked(const edit_list& edits) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = checked_.find(to_json(edits));
    if (it == checked_.end()) return std::nullopt;
    auto applied = std::move(it->second);
    checked_.erase(it);
    return applied;
  }

  // The original with its ids, where tune-ir-worker reads it.
  void write_original() {
    original_file_ = work_dir_ / ("program-" + cache_hash({program_->text()}) + ".ll");
    if (fs::exists(original_file_)) return;
    if (auto problem = compile_cache::write_file(original_file_, program_->text()); !problem.empty())
      throw std::runtime_error(problem);
  }

  // Applies the edits in tune-ir-worker (a process of its own: a crash inside
  // LLVM fails this variant's build, not the run); the error names what
  // happened to the process.
  std::optional<applied_program> apply_in_worker(const edit_list& edits, double timeout_s, std::string& error) const {
    auto edits_json = to_json(edits);
    static std::atomic<std::uint64_t> serial{0};
    auto stem = "apply-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    auto edits_file = work_dir_ / (stem + ".json"), out_file = work_dir_ / (stem + ".ll");
    if (auto problem = compile_cache::write_file(edits_file, edits_json); !problem.empty()) {
      error = "applying the edits: " + problem;
      return std::nullopt;
    }
    double limit_s = std::min(timeout_s, 120.0);
    auto result = run_process({ir_worker_.string(), original_file_.string(), edits_file.string(), out_file.string()},
                              limit_s, 64 * 1024);
    std::error_code ignored;
    fs::remove(edits_file, ignored);
    auto fail = [&](const std::string& what) -> std::optional<applied_program> {
      fs::remove(out_file, ignored);
      auto output = result.output.size() > 2000 ? result.output.substr(result.output.size() - 2000) : result.output;
      error = "applying the edits " + what + (output.empty() ? "" : ":\n" + output);
      return std::nullopt;
    };
    if (!result.started) return fail("failed: cannot start " + ir_worker_.string() + ": " + result.error);
    if (result.timed_out) return fail("timed out: tune-ir-worker killed after " + std::to_string(limit_s) + " s");
    if (result.signal != 0)
      return fail("crashed: tune-ir-worker got signal " + std::to_string(result.signal) + " (" +
                  ::strsignal(result.signal) + ")");
    if (result.exit_code != 0)
      return fail("failed: tune-ir-worker exited with code " + std::to_string(result.exit_code));
    nlohmann::json reply;
    try {
      auto end = result.output.find_last_not_of('\n');
      auto begin = result.output.rfind('\n', end);
      reply = nlohmann::json::parse(result.output.substr(begin == std::string::npos ? 0 : begin + 1));
      applied_program applied;
      applied.applied = reply.at("applied").get<std::size_t>();
      applied.hash = std::stoull(reply.at("hash").get<std::string>(), nullptr, 16);
      for (auto& skipped : reply.at("skipped"))
        applied.skipped.push_back({skipped.at("index").get<std::size_t>(), skipped.at("reason").get<std::string>()});
      applied.ir = read_text(out_file);
      fs::remove(out_file, ignored);
      return applied;
    } catch (const std::exception& e) {
      return fail(std::string("failed: no reply from tune-ir-worker (") + e.what() + ")");
    }
  }

  // The generated C++ as LLVM IR: clang-14 with the CPU backend's flags (by
  // argv), kept in the work folder by a hash of the source and the flags.
  fs::path matmul_ir(const std::string& source, const std::vector<std::string>& kernel_flags) {
    std::vector<std::string> argv{TUNE_CLANG14_PATH, "-x", "c++", "-std=c++20", "-fPIC"};
    argv.insert(argv.end(), kernel_flags.begin(), kernel_flags.end());
    auto key = cache_hash({source, [&] {
                             std::string all;
                             for (auto& a : argv) all += a + " ";
                             return all;
                           }()});
    auto ir = work_dir_ / ("matmul-" + key + ".ll");
    if (fs::exists(ir)) return ir;
    auto cpp = work_dir_ / ("matmul-" + key + ".cpp");
    if (auto problem = compile_cache::write_file(cpp, source); !problem.empty()) throw std::runtime_error(problem);
    auto tmp = ir.string() + ".tmp";
    argv.insert(argv.end(), {"-S", "-emit-llvm", "-o", tmp, cpp.string()});
    auto compiled = run_process(argv, 600, 64 * 1024);
    if (!compiled.ok())
      throw std::runtime_error(spec_.name + ": clang-14 cannot compile the generated source to IR: " +
                               (compiled.started ? compiled.output : compiled.error));
    fs::rename(tmp, ir);
    return ir;
  }

  // The CPU backend's measurement of the kernel, by the device's resident
  // process, with every finite error accepted: the error is an objective
  // here, not a verdict. (2fcnet and cnn programs keep a worker process per
  // trial: the program mode reads its inputs file and trains or predicts whole.)
  run_result run_matmul(const build_result& build, int device, double timeout_s) {
    auto plan = plan_measurement(*kernel_, options_, build);
    if (plan.failure) return *plan.failure;
    plan.request["tolerance"] = std::numeric_limits<double>::max();
    plan.request["cores"] = measuring_cores(device);
    plan.request["statistic"] = to_string(options_.measurement.statistic);
    if (!options_.resident_measurer) return run_worker(worker_, plan.request.dump(), timeout_s);
    run_limits in_full(timeout_s);
    in_full.early_stop = early_stop_policy::off();
    return measurers_.device(device, options_).measure(std::move(plan.request), in_full);
  }

  nlohmann::json request(const std::string& library, int device, digits_split split) const {
    nlohmann::json r = {{"mode", "program"},
                        {"library", library},
                        {"entry", spec_.entry},
                        {"inputs", inputs_[static_cast<int>(split)].string()},
                        {"params", spec_.params},
                        {"classes", 10},
                        {"cores", measuring_cores(device)},
                        {"min_time_s", options_.measurement.min_time_s},
                        {"min_repeats", options_.measurement.min_repeats},
                        {"max_repeats", options_.measurement.max_repeats},
                        {"statistic", to_string(options_.measurement.statistic)}};
    if (!params_file_.empty()) r["params_in"] = params_file_.string();
    return r;
  }

  // Runs the program on one split in the worker (once when `once`) and
  // scores the classes it predicted against the split's labels, which only
  // this process holds: objectives {run time, fraction misclassified}.
  run_result run_program(const std::string& library, int device, digits_split split, double timeout_s, bool once) {
    static std::atomic<std::uint64_t> serial{0};
    auto predictions =
        work_dir_ / ("predicted-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".bin");
    auto r = request(library, device, split);
    r["predictions_out"] = predictions.string();
    if (once) r.update({{"min_time_s", 0.0}, {"min_repeats", 1}, {"max_repeats", 1}});
    auto result = run_worker(worker_, r.dump(), timeout_s);
    std::error_code ignored;
    if (result.state == status::ok) {
      const auto& labels = labels_[static_cast<int>(split)];
      std::vector<std::int32_t> predicted(labels.size());
      std::ifstream in(predictions, std::ios::binary);
      if (!in.read(reinterpret_cast<char*>(predicted.data()),
                   static_cast<std::streamsize>(predicted.size() * sizeof(std::int32_t)))) {
        result.state = status::runtime_error;
        result.message = "the worker wrote no predictions to " + predictions.string();
      } else {
        std::size_t wrong = 0;
        for (std::size_t k = 0; k < labels.size(); ++k) wrong += predicted[k] != labels[k];
        result.objectives = {result.time_ms, static_cast<double>(wrong) / static_cast<double>(labels.size())};
      }
    }
    fs::remove(predictions, ignored);
    return result;
  }

  // The parameters prediction uses: the original program's training, run
  // each time the backend is made (the file is named by a hash of program and
  // training data).
  void train_parameters(const digits_data& digits) {
    auto compiled = compile_shared_object(options_, TUNE_CLANG14_PATH, program_->text(), ".ll", variant_flags(), 600);
    if (compiled.state != status::ok)
      throw std::runtime_error(spec_.name + ": the original program does not compile: " + compiled.message);
    auto training_inputs = work_dir_ / "digits-train-search.bin";
    write_inputs(digits, digits_split::search, true, training_inputs);
    auto path = work_dir_ / ("params-" + cache_hash({program_->text(), read_text(training_inputs)}) + ".bin");
    auto r = request(compiled.artifact, 0, digits_split::search);
    r["inputs"] = training_inputs.string();
    r["entry"] = spec_.train_entry;
    r["params_out"] = path.string();
    r["min_repeats"] = 1;
    r["max_repeats"] = 1;
    auto trained = run_worker(worker_, r.dump(), 600);
    if (trained.state != status::ok)
      throw std::runtime_error(spec_.name + ": training the original program failed: " + trained.message);
    params_file_ = path;
  }

  workload_spec spec_;
  task_backend_options options_;
  program_base base_;
  kernel_program_ptr kernel_;  // matmul: the CPU template
  search_space_ptr space_;
  std::shared_ptr<const ir_program> program_;
  std::string worker_;
  fs::path ir_worker_;
  fs::path original_file_;
  fs::path work_dir_;
  fs::path inputs_[3];                   // the worker's inputs file of each split, by digits_split
  std::vector<std::int32_t> labels_[3];  // each split's labels: never given to a program
  fs::path params_file_;
  mutable std::mutex mutex_;
  check_counts checks_;
  std::map<std::string, applied_program> checked_;  // by the list's JSON: applied by edits_apply, not built yet
  std::map<std::string, run_result> measured_;      // by shared object: one measurement per program
  std::vector<double> measurement_walls_s_;         // sorted: the wall time of each ok measurement by run()
  resident_measurers measurers_{resident_measurer::kind::cpu};  // matmul
};
}  // namespace

double program_slow_limit_s(double timeout_s, double slow_factor, double reference_s) {
  // The kernels' too-slow rule on whole measurements, in seconds, with no
  // limit of the first runs: infinite without a reference or a factor.
  return std::min(
      timeout_s, measure_rules::slow_limit_ms(reference_s, slow_factor, program_min_slow_limit_s, /*first_limit=*/0.0));
}

std::vector<std::string> program_workload_names() {
  std::vector<std::string> names;
  for (auto& w : workloads()) names.push_back(w.name);
  names.push_back("matmul:NxKxM");
  return names;
}

std::string default_matmul_configuration(const std::string& task_text) {
  auto task = parse_task(task_text);
  if (task.op != operator_kind::matmul) throw std::invalid_argument(task_text + ": not a matmul task");
  auto at_most = [](std::int64_t extent, std::int64_t limit) {
    for (auto d = std::min(extent, limit); d > 1; --d)
      if (extent % d == 0) return d;
    return std::int64_t{1};
  };
  auto n3 = at_most(task.n, 4), m3 = at_most(task.m, 16), k2 = at_most(task.k, 4);
  auto n2 = at_most(task.n / n3, 16), m2 = at_most(task.m / m3, 16), k1 = at_most(task.k / k2, 64);
  auto program = make_cpu_task_program(task, 1);
  auto config = program->space->from_values({{"tile_n", std::vector<std::int64_t>{1, task.n / (n2 * n3), n2, n3}},
                                             {"tile_m", std::vector<std::int64_t>{1, task.m / (m2 * m3), m2, m3}},
                                             {"tile_k", std::vector<std::int64_t>{task.k / (k1 * k2), k1, k2}},
                                             {"loop_order", std::vector<std::int64_t>{0, 2, 1}},
                                             {"a_panel", std::string("packed")},
                                             {"b_panel", std::string("packed")},
                                             {"prefetch", 0.0}});
  return program->space->to_json(config);
}

std::shared_ptr<program_backend> make_program_backend(const std::string& workload, const task_backend_options& options,
                                                      const program_base& base) {
  if (workload.rfind(matmul_prefix, 0) == 0) {
    auto task = parse_task(workload);  // std::invalid_argument naming the form
    if (task.op != operator_kind::matmul) throw std::invalid_argument("workload '" + workload + "' is not a matmul");
    return std::make_shared<program_backend_impl>(task, base, options);
  }
  for (auto& w : workloads())
    if (w.name == workload) return std::make_shared<program_backend_impl>(w, options);
  throw std::invalid_argument("unknown workload '" + workload + "' (accepted: " + join(program_workload_names()) + ")");
}

}  // namespace tune
