// tune-engine space: what a search-space file holds — parameters with their
// kind and size, the Cartesian size, the constraints and the number of valid
// configurations.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tune/engine/readers.hpp"

namespace tune::cli {
namespace {

struct space_options {
  std::string file;
  std::uint64_t limit = 20'000'000;
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
  std::optional<std::uint64_t> valid;
  if (cartesian && *cartesian <= options.limit) valid = space.count_valid(options.limit);

  if (options.json) {
    nlohmann::json out{{"file", options.file}, {"parameters", nlohmann::json::array()}};
    for (const auto& p : space.parameters()) {
      out["parameters"].push_back(
          {{"name", p->name()}, {"kind", to_string(p->kind())}, {"size", p->cardinality()}, {"values", describe(*p)}});
    }
    out["cartesian_size"] = cartesian ? nlohmann::json(*cartesian) : nlohmann::json(nullptr);
    out["constraints"] = constraints;
    out["valid"] = valid ? nlohmann::json(*valid) : nlohmann::json(nullptr);
    fmt::print("{}\n", out.dump(2));
    return exit_ok;
  }

  std::size_t width = 9;
  for (const auto& p : space.parameters()) width = std::max(width, p->name().size());
  fmt::print("{}\n", options.file);
  fmt::print("  {:<{}}  {:<13}  {:>10}  {}\n", "parameter", width, "kind", "size", "values");
  for (const auto& p : space.parameters())
    fmt::print("  {:<{}}  {:<13}  {:>10}  {}\n", p->name(), width, to_string(p->kind()), p->cardinality(),
               describe(*p));
  fmt::print("Cartesian size: {}\n", cartesian ? std::to_string(*cartesian) : std::string("more than 2^64"));
  if (constraints.empty()) {
    fmt::print("constraints: none\n");
  } else {
    fmt::print("constraints: {}\n", constraints.size());
    for (const auto& c : constraints) fmt::print("  {}\n", c);
  }
  if (valid) {
    fmt::print("valid configurations: {}", *valid);
    if (cartesian && *cartesian > 0) fmt::print(" ({:.2f}% of the Cartesian product)", 100.0 * *valid / *cartesian);
    fmt::print("\n");
  } else {
    fmt::print("valid configurations: not counted (the Cartesian size exceeds --limit {})\n", options.limit);
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
  sub->add_option("--limit", options->limit, "count valid configurations only when the Cartesian size is at most this")
      ->capture_default_str();
  sub->add_flag("--json", options->json, "print the description as JSON");
  commands.emplace_back(sub, [options] { return run_space(*options); });
}

}  // namespace tune::cli
