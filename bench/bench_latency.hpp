#pragma once
// The inputs of the throughput bound min(W / compile, G / measure) for a
// replayed dataset, shared by the benchmark programs.

#include <algorithm>
#include <utility>

#include "tune/kernels/replay.hpp"

namespace tune::bench {

/// Mean recorded compile time and mean recorded measure time (benchmark +
/// verification) over the configurations that reach each stage.
inline std::pair<double, double> dataset_latencies(const replay_dataset& data) {
  double c = 0, m = 0;
  std::size_t nc = 0, nm = 0;
  for (const auto& r : data.records) {
    if (r.state == status::instantiation_error) continue;  // rejected before compile
    c += r.compile_s;
    ++nc;
    if (r.state == status::compile_error || r.state == status::compile_error_device) continue;
    m += r.benchmark_s + r.verification_s;
    ++nm;
  }
  return {c / static_cast<double>(std::max<std::size_t>(nc, 1)), m / static_cast<double>(std::max<std::size_t>(nm, 1))};
}

}  // namespace tune::bench
