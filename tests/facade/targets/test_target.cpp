// The targets of a session: exactly one is chosen, each with its default
// budget and backend; a session without a seed draws one and reports it.
#include <catch2/catch.hpp>
#include <set>

#include "facade/input_error_of.hpp"
#include "targets/target.hpp"
#include "tune/engine/parameter.hpp"

using namespace tune;

namespace {

search_space_ptr target_line_space() {
  std::vector<double> xs;
  for (int i = 0; i < 32; ++i) xs.push_back(i);
  return std::make_shared<search_space>(std::vector<parameter_ptr>{make_discrete_parameter("x", xs)}, "line");
}

session_options objective_over_line() {
  session_options o;
  o.objective = [](const configuration& c) { return 1.0 + static_cast<double>(c[0]); };
  o.space = target_line_space();
  o.strategy = "random";
  return o;
}

std::string choice_error(const session_options& o) {
  return test::input_error_of([&] { detail::make_target(o); }, "(no error)");
}

}  // namespace

TEST_CASE("targets: exactly one is chosen, named as the front end names them", "[facade]") {
  session_options o;
  CHECK(choice_error(o) == "nothing to tune: give one of task, dataset, kernel, objective, custom_backend, workload");
  o.task = "matmul:64x64x64";
  CHECK(detail::make_target(o)->field() == "task");
  o.dataset = "x.json";
  CHECK(choice_error(o) ==
        "give exactly one of task, dataset, kernel, objective, custom_backend, workload (given: "
        "task, dataset)");
  // A command offers what it has flags for, and says so in its own words.
  o.option_names = {{"task", "--task"}, {"dataset", "--dataset"}, {"kernel", "--kernel"}};
  CHECK(choice_error(o) == "give exactly one of --task, --dataset, --kernel (given: --task, --dataset)");
  session_options space_alone;
  space_alone.space_file = "space.json";
  space_alone.option_names = {{"space_file", "--space"}, {"task", "--task"}};
  CHECK_THAT(choice_error(space_alone), Catch::Matchers::StartsWith("--space space.json: a search space alone") &&
                                            Catch::Matchers::Contains("--task") &&
                                            Catch::Matchers::Contains("through the library"));
}

TEST_CASE("targets: each kind has its field, default budget and default backend", "[facade]") {
  std::set<std::string> fields;
  for (const auto& t : detail::all_targets()) {
    INFO(t->field());
    CHECK(fields.insert(t->field()).second);
    CHECK(default_budget(t->field()) == t->default_budget());
    CHECK(t->default_budget() >= 100);
  }
  CHECK(fields == std::set<std::string>{"task", "dataset", "kernel", "objective", "custom_backend", "workload"});
  CHECK(default_budget("task") == 150);
  CHECK(default_budget("dataset") == 500);
  CHECK_THROWS_AS(default_budget("model"), std::invalid_argument);
  session_options o;
  CHECK(detail::make_dataset_target()->default_backend(o) == "replay");
  CHECK(detail::make_task_target()->default_backend(o) == "cpu");
  o.backend_name = "cuda";
  CHECK(detail::make_task_target()->default_backend(o) == "cuda");
  CHECK(detail::make_objective_target()->default_backend(o) == "objective");
  // Recorded numbers, two objectives and a user's function (whose calls are
  // the budget) are neither probed for drift nor confirmed by measuring again.
  CHECK_FALSE(detail::make_dataset_target()->remeasures());
  CHECK_FALSE(detail::make_workload_target()->remeasures());
  CHECK_FALSE(detail::make_objective_target()->remeasures());
  CHECK(detail::make_custom_backend_target()->remeasures());
  CHECK(detail::make_task_target()->remeasures());
  // Only built-in tasks and datasets go to nodes.
  CHECK(detail::make_task_target()->runs_on_nodes());
  CHECK(detail::make_dataset_target()->runs_on_nodes());
  CHECK_FALSE(detail::make_kernel_target()->runs_on_nodes());
  storage::topology topo;
  topo.origin = "topo.yaml";
  CHECK_THAT(test::input_error_of([&] { detail::make_kernel_target()->for_nodes(o, topo); }, "(no error)"),
             Catch::Matchers::StartsWith("topo.yaml: nodes:"));
}

TEST_CASE("targets: a session without a budget takes its target's, without a seed draws one and reports it",
          "[facade]") {
  auto o = objective_over_line();
  session first(o);
  CHECK(first.budget_trials() == default_budget("objective"));
  auto drawn = first.seed();
  std::vector<std::string> first_configs;
  auto a = objective_over_line();
  a.budget.trials = 12;
  a.on_trial = [&](const trial_info& t) { first_configs.push_back(t.config_json); };
  session run_a(a);
  auto report_a = run_a.run();
  CHECK(report_a.seed_drawn);
  CHECK(report_a.seed == run_a.seed());
  CHECK(report_a.to_json()["seed_drawn"] == true);
  CHECK_THAT(report_a.to_text(), Catch::Matchers::Contains("seed " + std::to_string(report_a.seed) + " (drawn)"));
  // The drawn seed repeats the run.
  std::vector<std::string> second_configs;
  auto b = objective_over_line();
  b.budget.trials = 12;
  b.seed = report_a.seed;
  b.on_trial = [&](const trial_info& t) { second_configs.push_back(t.config_json); };
  auto report_b = session(b).run();
  CHECK_FALSE(report_b.seed_drawn);
  CHECK(first_configs.size() == 12);
  CHECK(second_configs == first_configs);
  // Two draws are different seeds (64 random bits).
  CHECK(session(objective_over_line()).seed() != drawn);
}

TEST_CASE("targets: flush_cache is refused on any device but the CPU, naming where it was set", "[facade]") {
  session_options o;
  o.task = "matmul:64x64x64";
  storage::topology topo;
  topo.origin = "topo.yaml";
  topo.measurement = measurement_protocol{};
  topo.measurement->flush_cache = true;
  CHECK(detail::measurement_on(o, topo, "cpu").flush_cache);
  CHECK_THAT(test::input_error_of([&] { detail::measurement_on(o, topo, "cuda"); }, "(no error)"),
             Catch::Matchers::Contains("topo.yaml: measurement.flush_cache") &&
                 Catch::Matchers::Contains("devices are cuda: remove flush_cache"));
  o.measurement = topo.measurement;
  CHECK_THAT(test::input_error_of([&] { detail::measurement_on(o, topo, "hip"); }, "(no error)"),
             Catch::Matchers::Contains("session_options::measurement.flush_cache"));
  o.measurement->flush_cache = false;
  CHECK_FALSE(detail::measurement_on(o, topo, "cuda").flush_cache);
}
