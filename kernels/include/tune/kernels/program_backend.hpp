#pragma once
// The backend of program-edit evolution (GEVO-ML): a configuration is an edit
// list (tune/engine/program_edit.hpp, encoded) of one workload's LLVM IR.
//
//   edit list ──apply, repair, verify (ir_program, in the compile worker)──> IR
//       ──clang-14 -O2 -shared (argv, CPU compile cache keyed by the IR)──> .so
//       ──tune-kernel-worker, program mode (pinned, own process)──> time, error
//
// A variant that does not compile is a compile_error; one that crashes, hangs
// or gives a non-finite score is a runtime_error, run_timeout or
// wrong_answer; a 2fcnet or cnn variant whose measurement goes on past
// program_slow_limit_s (once one has finished) is too_slow. Variants whose
// edited IR is the same program (same IR text, so the same cached shared
// object) are measured once by run(): later ones get the first measurement;
// run_interleaved() measures every program anew in each round (a
// confirmation). Built only with LLVM 14 (TUNE_WITH_LLVM).
//
// Workloads: "2fcnet:predict" (the forward pass of a trained 2fcNet over a
// split's digits; edits change fcnet_predict and fcnet_predict_all) and
// "2fcnet:train" (four epochs of mini-batch SGD from a fixed seed, then a
// split's digits; edits change fcnet_train). Objectives: {run time in ms,
// fraction of the search split's images misclassified}; held_out() gives
// the validation and test errors after the search. A program gets the
// training labels (training) or none (prediction), never the labels of the
// images it predicts: the worker returns the predicted classes and this
// process scores them. Data: scikit-learn's digits (data/digits/, see
// read_digits), 1,438 to train, 120 search, 120 validation, 119 test.
// "cnn:predict" and "cnn:train" are the same for a small convolutional
// network (kernels/workloads/cnn.c: conv 3x3, ReLU, 2x2 max pool, fully
// connected); edits change cnn_predict or cnn_train, and cnn_forward.
//
// "matmul:NxKxM": one configuration of the CPU MatMul template (a tuned one,
// or default_matmul_configuration()), its generated C++ compiled by clang-14
// -O3 to IR; every function of the module is edited. Variants are measured
// as the CPU backend measures kernels (the device's resident worker process,
// measure mode, the same inputs), in full: a program's time alone is not its
// objective, so no run is stopped against the best time. Objectives {run
// time in ms, the largest |out - ref| / max(1, |ref|) against the naive
// reference}. A variant whose outputs are not finite is a wrong_answer.

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/ir_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// "2fcnet:predict", "2fcnet:train", "cnn:predict", "cnn:train", "matmul:NxKxM".
std::vector<std::string> program_workload_names();

/// The digits' splits (docs/gevo.md): programs train on `train`; the search's
/// error objective is the error on `search`; `validation` chooses among the
/// front after the search; `test` is reported for the chosen variants.
enum class digits_split { search, validation, test };
/// "search", "validation", "test".
std::string_view to_string(digits_split split);

struct digits_set {
  std::vector<float> pixels;         ///< n x 64, scaled to [0, 1]
  std::vector<std::int32_t> labels;  ///< n
};

struct digits_data {
  digits_set train, search, validation, test;
  const digits_set& split(digits_split which) const;
};

/// Reads scikit-learn's digits (gzip'ed CSV, 64 pixels 0..16 and a label per
/// line): every fifth image (index % 5 == 4) is held out, the others train;
/// the held-out ones are dealt in turn to search, validation and test.
/// Throws std::runtime_error naming the file (and line) it cannot read.
digits_data read_digits(const std::filesystem::path& csv_gz);

/// A variant's error on the splits the search never saw: NaN where the
/// workload has none (matmul) or the variant did not run, with `message`
/// saying why.
struct held_out_errors {
  double validation = std::numeric_limits<double>::quiet_NaN();
  double test = std::numeric_limits<double>::quiet_NaN();
  std::string message;
};

/// What a matmul workload starts from: a configuration of the CPU template's
/// space (search_space::to_json of make_cpu_task_program(task)), e.g. the best
/// of a tuning run; empty: default_matmul_configuration().
struct program_base {
  std::string configuration_json;
  std::string origin;  ///< where it comes from, for messages ("built-in default" when empty)
};

/// A reasonable cache-blocked configuration of the CPU MatMul template for
/// any shape (row tiles of up to 4, column tiles of up to 16, blocks of up to
/// 64 rows, 256 columns and depth 256), as JSON. Throws std::invalid_argument
/// for a task that is not a matmul.
std::string default_matmul_configuration(const std::string& task);

class program_backend : public backend {
 public:
  /// The original program, its ids and outline.
  virtual std::shared_ptr<const ir_program> program() const = 0;
  /// The workload's name, e.g. "2fcnet:train".
  virtual std::string workload() const = 0;
  /// matmul: the configuration the program was generated from (JSON) and
  /// where it comes from; empty for 2fcnet and cnn. The task key holds a hash of it,
  /// so runs from different configurations never share measurements.
  virtual program_base base() const = 0;
  /// The variant's error on the validation and test splits (built as
  /// build() does, run once on each); NaN for matmul, whose error is
  /// against a reference and has no splits.
  virtual held_out_errors held_out(const configuration& config, double timeout_s) = 0;
  /// Whether every edit of the list applies to the original and the edited
  /// module verifies: the edits applied in tune-ir-worker as build() applies
  /// them, nothing compiled (build() of the same list then reuses the
  /// result). A worker that fails or crashes says no. Thread-safe.
  virtual bool edits_apply(const edit_list& edits, double timeout_s) = 0;
  /// How many lists edits_apply() was asked about, and how many it refused.
  struct check_counts {
    std::uint64_t checked = 0;
    std::uint64_t refused = 0;
  };
  virtual check_counts checks() const = 0;
};

/// The least wall-time limit program_slow_limit_s gives a measurement.
inline constexpr double program_min_slow_limit_s = 1.0;

/// The wall-time limit of one measurement of a 2fcnet or cnn variant, in
/// seconds. A measurement's wall time (worker start, inputs read, the runs
/// to the protocol's minimum time) hardly depends on the program's speed
/// until a run takes a good part of a second, so one going on past
/// slow_factor x `reference_s` (the median wall time of the run's
/// measurements that finished), and at least program_min_slow_limit_s, is of
/// a program hundreds of times slower than the others, or endless: it is
/// stopped (too_slow). min(timeout_s, that); timeout_s alone while no
/// reference is known (NaN) or slow_factor is not positive. The kernels' rule
/// (measure_rules::slow_limit_ms) in seconds, without a first-runs limit.
double program_slow_limit_s(double timeout_s, double slow_factor, double reference_s);

/// Throws std::invalid_argument naming the accepted workloads for an unknown
/// one (or a bad matmul shape or base configuration), and std::runtime_error
/// when the workload's IR or data cannot be read or made, or (2fcnet:predict)
/// the original cannot be trained for its parameters.
std::shared_ptr<program_backend> make_program_backend(const std::string& workload, const task_backend_options& options,
                                                      const program_base& base = {});

}  // namespace tune
