#pragma once
// The worker's "program" mode: runs a whole program of program-edit evolution
// (a classifier such as 2fcNet) on a data file and reports its run time and
// its error on the held-out images.
//
// Request: {"mode": "program", "library": ".so", "entry": name,
//           "data": file (int32 n, n x 64 float32 pixels, n int32 labels),
//           "n_train": k (the first k images train, the rest are held out),
//           "params": count of float parameters, "params_in": file (optional),
//           "params_out": file (optional; written after the first run),
//           "classes": 10, "cores": [c], "min_time_s", "min_repeats", "max_repeats",
//           "statistic": "median" (default) | "min"}
// The entry is void entry(const float* x, const int* y, int n_train, int
// n_test, float* params, float* scores). Reply: {"status": "ok", "time_ms":
// the statistic of the repeats, "median_ms", "min_ms", "repeats": the runs
// timed (every run, the first, whose scores are checked, included),
// "kernel_s": their seconds, "max_error": fraction of held-out images
// misclassified}, or "wrong_answer" when a score is not
// finite.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

/// "time_ms", "median_ms", "min_ms" and "statistic" of a reply: the repeats'
/// time by the request's "statistic" ("median", the default, or "min": the
/// least disturbed run, steadier on a loaded machine), and both statistics.
nlohmann::json time_statistics(std::vector<double> times_ms, const nlohmann::json& request);

/// Runs the request and prints the reply; returns the process's exit code.
int run_program_mode(const nlohmann::json& request);
