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

#include <memory>
#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"
#include "tune/kernels/ir_program.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

/// "2fcnet:predict", "2fcnet:train".
std::vector<std::string> program_workload_names();

class program_backend : public backend {
 public:
  /// The original program, its ids and outline.
  virtual std::shared_ptr<const ir_program> program() const = 0;
  /// The workload's name, e.g. "2fcnet:train".
  virtual std::string workload() const = 0;
};

/// Throws std::invalid_argument naming the accepted workloads for an unknown
/// one, and std::runtime_error when the workload's IR or data cannot be read
/// or (2fcnet:predict) the original cannot be trained for its parameters.
std::shared_ptr<program_backend> make_program_backend(const std::string& workload, const task_backend_options& options);

}  // namespace tune
