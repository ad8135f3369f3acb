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
// wrong_answer. Variants whose edited IR is the same program (same IR text,
// so the same cached shared object) are measured once: later ones get the
// first measurement. Built only with LLVM 14 (TUNE_WITH_LLVM).
//
// Workloads: "2fcnet:predict" (the forward pass of a trained 2fcNet over the
// held-out digits; edits change fcnet_predict and fcnet_predict_all) and
// "2fcnet:train" (four epochs of mini-batch SGD from a fixed seed, then the
// held-out digits; edits change fcnet_train). Objectives: {run time in ms,
// fraction of held-out images misclassified}. Data: scikit-learn's digits
// (data/digits/), every fifth image held out (359), the others train (1,438).
//
// "matmul:NxKxM": one configuration of the CPU MatMul template (a tuned one,
// or default_matmul_configuration()), its generated C++ compiled by clang-14
// -O3 to IR; every function of the module is edited. Variants are measured
// as the CPU backend measures kernels (the device's resident worker process,
// measure mode, the same inputs), in full: a program's time alone is not its
// objective, so no run is stopped against the best time. Objectives {run
// time in ms, the largest |out - ref| / max(1, |ref|) against the naive
// reference}. A variant whose outputs are not finite is a wrong_answer.

#include <memory>
#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/ir_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// "2fcnet:predict", "2fcnet:train", "matmul:NxKxM".
std::vector<std::string> program_workload_names();

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
  /// where it comes from; empty for 2fcnet. The task key holds a hash of it,
  /// so runs from different configurations never share measurements.
  virtual program_base base() const = 0;
};

/// Throws std::invalid_argument naming the accepted workloads for an unknown
/// one (or a bad matmul shape or base configuration), and std::runtime_error
/// when the workload's IR or data cannot be read or made, or (2fcnet:predict)
/// the original cannot be trained for its parameters.
std::shared_ptr<program_backend> make_program_backend(const std::string& workload, const task_backend_options& options,
                                                      const program_base& base = {});

}  // namespace tune
