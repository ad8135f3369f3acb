#pragma once
// The worker's "program" mode: runs a whole program of program-edit evolution
// (a classifier such as 2fcNet) on an inputs file and reports its run time
// and the class it predicts for each image. It never sees the labels of the
// images it predicts: the caller keeps them and computes the error, so that
// an edited program cannot read them (they are not in this process).
//
// Request: {"mode": "program", "library": ".so", "entry": name,
//           "inputs": file (int32 n_train, int32 n_eval, int32 has_labels,
//                     (n_train + n_eval) x 64 float32 pixels, then
//                     n_train int32 training labels when has_labels),
//           "predictions_out": file (optional: n_eval int32, the argmax of
//                     each image's scores in the first run),
//           "params": count of float parameters, "params_in": file (optional),
//           "params_out": file (optional; written after the first run),
//           "classes": 10, "cores": [c], "min_time_s", "min_repeats", "max_repeats",
//           "statistic": "median" (default) | "min"}
// The entry is void entry(const float* x, const int* y, int n_train, int
// n_eval, float* params, float* scores): x the training images then the
// images to predict, y the training labels or a null pointer (no labels
// given), scores n_eval x classes. Reply: {"status": "ok", "time_ms": the
// statistic of the repeats, "median_ms", "min_ms", "repeats": the runs timed
// (every run, the first, whose scores are checked, included), "kernel_s":
// their seconds}, or "wrong_answer" when a score is not finite.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

/// "time_ms", "median_ms", "min_ms" and "statistic" of a reply: the repeats'
/// time by the request's "statistic" ("median", the default, or "min": the
/// least disturbed run, steadier on a loaded machine), and both statistics.
nlohmann::json time_statistics(std::vector<double> times_ms, const nlohmann::json& request);

/// Runs the request and prints the reply; returns the process's exit code.
int run_program_mode(const nlohmann::json& request);
