// Time per k-NN surrogate query (k = 9, Canberra distance) at 1k, 10k and
// 100k observations on the OpEvo MatMul space (factorizations of 512 and 1024
// into 4 parts and of 1024 into 3), k-d tree against exhaustive search.
// Usage: bench_surrogate [queries]
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <random>

#include "bench_text.hpp"
#include "tune/engine/surrogate.hpp"

using namespace tune;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
  int queries = 2000;
  CLI::App app{
      "Time per k-NN surrogate query (k = 9) at 1k, 10k and 100k observations on the OpEvo MatMul space: "
      "value tables, k-d tree and exhaustive search"};
  bench::last_value_wins(app);
  app.add_option("queries", queries, "Queries timed at each size (fewer for the slower searches)")
      ->capture_default_str()
      ->check(bench::more_than_zero());
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{make_factorization_parameter("m", 512, 4),
                                                                         make_factorization_parameter("k", 1024, 4),
                                                                         make_factorization_parameter("n", 1024, 3)});
  fmt::print("space: {} configurations, {} features\n", *space->cartesian_size(), space->feature_count());
  fmt::print("{:>12} {:>10} {:>14} {:>14} {:>14}\n", "observations", "build_ms", "tables_us", "kd_tree_us",
             "exhaustive_us");
  for (std::size_t n : {1000, 10000, 100000}) {
    rng_type rng(fork_seed(1, n));
    std::uniform_real_distribution<double> value(0.1, 10.0);
    knn_surrogate knn(space, 9);
    while (knn.size() < n) knn.add(space->draw(rng), value(rng));
    std::vector<configuration> probes;
    for (int q = 0; q < queries; ++q) probes.push_back(space->draw(rng));

    auto start = std::chrono::steady_clock::now();
    double sink = knn.predict(probes[0], knn_search::kd_tree);  // builds the tree
    double build_ms = seconds_since(start) * 1e3;
    auto per_query = [&](knn_search search, int count) {
      auto begin = std::chrono::steady_clock::now();
      for (int q = 0; q < count; ++q) sink += knn.predict(probes[static_cast<std::size_t>(q)], search);
      return seconds_since(begin) * 1e6 / count;
    };
    double tables_us = per_query(knn_search::value_tables, queries);
    double tree_us = per_query(knn_search::kd_tree, queries / 4 + 1);
    double brute_us = per_query(knn_search::exhaustive, queries / 10 + 1);
    fmt::print("{:>12} {:>10.2f} {:>14.2f} {:>14.2f} {:>14.2f}{}\n", n, build_ms, tables_us, tree_us, brute_us,
               sink == 1e300 ? "!" : "");
  }
}
