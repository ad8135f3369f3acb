// tune-engine space: what a search-space file holds — parameters with their
// kind and size, the Cartesian size, the constraints and the number of valid
// configurations.
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tune/engine/readers.hpp"

namespace tune::cli {
namespace {

struct space_options {
  std::string file;
  std::uint64_t limit = 20'000'000;
  std::size_t draws = 100'000;
  std::uint64_t seed = 1;
  bool json = false;
};

std::int64_t product_of(const parameter_value& v) {
  std::int64_t p = 1;
  for (auto x : std::get<std::vector<std::int64_t>>(v)) p *= x;
  return p;
}

/// A short description of a parameter's values.
std::string describe(const parameter& p) {
  auto first = p.value(0);
  switch (p.kind()) {
    case parameter_kind::factorization:
      return fmt::format("{} split into {} factors", product_of(first),
                         std::get<std::vector<std::int64_t>>(first).size());
    case parameter_kind::permutation:
      return fmt::format("orders of {} loops", std::get<std::vector<std::int64_t>>(first).size());
    default: {
      std::string out = "[";
      std::uint64_t shown = std::min<std::uint64_t>(p.cardinality(), 8);
      for (std::uint64_t i = 0; i < shown; ++i) out += (i ? ", " : "") + to_string(p.value(i));
      if (shown < p.cardinality()) out += fmt::format(", … ({} more)", p.cardinality() - shown);
      return out + "]";
    }
  }
}

int run_space(const space_options& options) {
  search_space space = read_space_file(options.file);
  auto cartesian = space.cartesian_size();
  const auto& constraints = space.constraint_expressions();
  // Exact when there is nothing to check (no constraints) or the product is
  // small enough to enumerate; otherwise estimated from uniform draws.
  std::optional<std::uint64_t> valid;
  std::string valid_text;
  std::optional<search_space::valid_estimate> estimate;
  if (constraints.empty() && !space.members()) {
    valid = cartesian;
    valid_text = space.cartesian_size_text();
  } else if (space.members() || (cartesian && *cartesian <= options.limit)) {
    valid = space.count_valid(options.limit);
    if (valid) valid_text = std::to_string(*valid);
  } else {
    rng_type rng(options.seed);
    estimate = space.estimate_valid(options.draws, rng);
  }
  double log10_size = space.cartesian_log10();
  auto scaled = [&](double fraction) { return fraction > 0 ? std::pow(10.0, log10_size) * fraction : 0.0; };
  if (options.json) {
    nlohmann::json out{{"file", options.file}, {"parameters", nlohmann::json::array()}};
    for (const auto& p : space.parameters()) {
      out["parameters"].push_back(
          {{"name", p->name()}, {"kind", to_string(p->kind())}, {"size", p->cardinality()}, {"values", describe(*p)}});
    }
    out["cartesian_size"] = cartesian ? nlohmann::json(*cartesian) : nlohmann::json(nullptr);
    out["cartesian_size_text"] = space.cartesian_size_text();
    out["cartesian_log10"] = log10_size;
    out["constraints"] = constraints;
    out["valid"] = valid ? nlohmann::json(*valid) : nlohmann::json(nullptr);
    out["valid_text"] = valid_text.empty() ? nlohmann::json(nullptr) : nlohmann::json(valid_text);
    out["valid_exact"] = !estimate && !valid_text.empty();
    if (estimate) {
      out["valid_estimate"] = {{"draws", estimate->draws},
                               {"valid_draws", estimate->valid},
                               {"fraction", estimate->fraction},
                               {"fraction_low", estimate->low},
                               {"fraction_high", estimate->high},
                               {"count", scaled(estimate->fraction)},
                               {"count_low", scaled(estimate->low)},
                               {"count_high", scaled(estimate->high)},
                               {"seed", options.seed}};
    }
    fmt::print("{}\n", out.dump(2));
    return exit_ok;
  }
  std::size_t width = 9, size_width = 10;
  for (const auto& p : space.parameters()) {
    width = std::max(width, p->name().size());
    size_width = std::max(size_width, std::to_string(p->cardinality()).size());
  }
  fmt::print("{}\n", options.file);
  fmt::print("  {:<{}}  {:<13}  {:>{}}  {}\n", "parameter", width, "kind", "size", size_width, "values");
  for (const auto& p : space.parameters())
    fmt::print("  {:<{}}  {:<13}  {:>{}}  {}\n", p->name(), width, to_string(p->kind()), p->cardinality(), size_width,
               describe(*p));
  fmt::print("Cartesian size: {}{}\n", space.cartesian_size_text(),
             cartesian ? std::string() : fmt::format(" (10^{:.1f}, more than 2^64)", log10_size));
  if (constraints.empty()) {
    fmt::print("constraints: none\n");
  } else {
    fmt::print("constraints: {}\n", constraints.size());
    for (const auto& c : constraints) fmt::print("  {}\n", c);
  }
  if (estimate) {
    fmt::print(
        "valid configurations: about {:.3g} (95% interval {:.3g} to {:.3g}), estimated from {} uniform draws of "
        "which {} were valid (seed {}); the Cartesian size exceeds --limit {}, so they are not counted exactly\n",
        scaled(estimate->fraction), scaled(estimate->low), scaled(estimate->high), estimate->draws, estimate->valid,
        options.seed, options.limit);
  } else if (!valid_text.empty()) {
    fmt::print("valid configurations: {}", valid_text);
    if (constraints.empty() && !space.members())
      fmt::print(" (exact: no constraints)");
    else if (valid && cartesian && *cartesian > 0)
      fmt::print(" ({:.2f}% of the Cartesian product)", 100.0 * *valid / *cartesian);
    fmt::print("\n");
  } else {
    fmt::print("valid configurations: not counted\n");
  }
  return exit_ok;
}

}  // namespace

void add_space_command(CLI::App& app, command_list& commands) {
  auto options = std::make_shared<space_options>();
  auto* sub = app.add_subcommand(
      "space",
      "Describe a search-space file (NNI, T1 spec, Kernel Tuner cache): parameters, kinds, sizes, valid count");
  sub->add_option("FILE", options->file, "search-space file")->required();
  sub->add_option("--limit", options->limit,
                  "count valid configurations exactly only when the Cartesian size is at most this (else estimate)")
      ->capture_default_str()
      ->check(not_negative());
  sub->add_option("--draws", options->draws,
                  "uniform draws that estimate the valid count when the space is too large to count")
      ->capture_default_str()
      ->check(not_negative())
      ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}));
  sub->add_option("--seed", options->seed, "seed of those draws")->capture_default_str()->check(not_negative());
  sub->add_flag("--json", options->json, "print the description as JSON");
  commands.emplace_back(sub, [options] { return run_space(*options); });
}

}  // namespace tune::cli
