#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "tune/engine/pareto.hpp"
#include "tune/engine/program_edit.hpp"

using namespace tune;

namespace {
program_outline small_outline() {
  // ids 10..15: 10, 11 binary ops, 12 a call of three operands, 13 unary, 14 a phi, 15 a return.
  program_outline o;
  o.instructions = {{10, 2, true}, {11, 2, true}, {12, 3, true}, {13, 1, true}, {14, 2, false}, {15, 1, false}};
  return o;
}

edit_list all_kinds() {
  return {{edit_kind::copy, 10, 15, 0, 0, 1},
          {edit_kind::remove, 11, 0, 0, 0, 18446744073709551615ull},
          {edit_kind::move, 12, 10, 0, 0, 3},
          {edit_kind::swap_operands, 12, 0, 2, 0, 4},
          {edit_kind::replace_operand, 13, 0, 0, 0, 5}};
}

std::multiset<std::string> descriptions(const edit_list& edits) {
  std::multiset<std::string> out;
  for (auto& e : edits) out.insert(describe(e));
  return out;
}
}  // namespace

TEST_CASE("edit lists round-trip through JSON and the configuration encoding", "[engine][program_edit]") {
  auto edits = all_kinds();
  auto text = to_json(edits);
  CHECK(text.find("\"kind\":\"delete\"") != std::string::npos);
  CHECK(text.find("\"seed\":\"18446744073709551615\"") != std::string::npos);
  CHECK(edit_list_from_json(text) == edits);
  CHECK(decode(encode(edits)) == edits);
  CHECK(encode(edits).size() == 25);
  CHECK(decode(encode({})).empty());
  CHECK(to_json({}) == "{\"edits\":[]}");
  CHECK(describe(edits[0]) == "copy %10 before %15 (seed 1)");
  CHECK(describe(edits[3]) == "swap %12 operands 2 and 0 (seed 4)");
}

TEST_CASE("the edit-list space validates and writes edit lists", "[engine][program_edit]") {
  auto space = make_edit_list_space("2fcnet:train");
  CHECK(space->dimension() == 0);
  CHECK(space->codec() != nullptr);
  auto config = encode(all_kinds());
  CHECK(space->is_valid(config));
  CHECK(space->is_valid(configuration{}));
  CHECK_FALSE(space->is_valid(configuration{1, 2}));
  CHECK(space->to_json(config) == to_json(all_kinds()));
  CHECK(space->from_json(space->to_json(config)) == config);
  CHECK_THROWS_AS(space->from_json("{\"tile\": 4}"), std::invalid_argument);
}

TEST_CASE("bad edit lists are refused with the field named", "[engine][program_edit]") {
  auto refuses = [](const std::string& text, const std::string& needle) {
    try {
      edit_list_from_json(text);
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
      return;
    }
    FAIL("accepted " << text);
  };
  refuses("[1,2]", "expected an object");
  refuses("{\"edits\": [", "not JSON");
  refuses(R"({"edits": [{"kind": "rotate", "target": 1, "seed": "1"}]})", "'kind'");
  refuses(R"({"edits": [{"kind": "delete", "target": -1, "seed": "1"}]})", "'target'");
  refuses(R"({"edits": [{"kind": "copy", "target": 1, "seed": "1"}]})", "'anchor'");
  refuses(R"({"edits": [{"kind": "swap", "target": 1, "operand": 0, "seed": "1"}]})", "'operand2'");
  refuses(R"({"edits": [{"kind": "delete", "target": 1, "seed": 7}]})", "'seed'");
  refuses(R"({"edits": [{"kind": "delete", "target": 1, "seed": "-7"}]})", "'seed'");
  refuses(R"({"edits": [{"kind": "delete", "target": 1, "seed": "7x"}]})", "'seed'");
  CHECK_THROWS_AS(decode(configuration{1, 2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(decode(configuration{9, 1, 0, 0, 0}), std::invalid_argument);
}

TEST_CASE("random edits fit the outline", "[engine][program_edit]") {
  auto outline = small_outline();
  std::map<std::uint32_t, instruction_outline> by_id;
  for (auto& i : outline.instructions) by_id[i.id] = i;
  rng_type rng(42);
  std::set<edit_kind> kinds;
  for (int n = 0; n < 500; ++n) {
    auto e = random_edit(outline, rng);
    kinds.insert(e.kind);
    REQUIRE(by_id.count(e.target));
    auto& t = by_id[e.target];
    switch (e.kind) {
      case edit_kind::copy:
      case edit_kind::move:
        CHECK(by_id.count(e.anchor));
        [[fallthrough]];
      case edit_kind::remove:
        CHECK(t.movable);
        break;
      case edit_kind::swap_operands:
        CHECK(e.operand < t.operands);
        CHECK(e.operand2 < t.operands);
        CHECK(e.operand != e.operand2);
        break;
      case edit_kind::replace_operand:
        CHECK(e.operand < t.operands);
        break;
    }
  }
  CHECK(kinds.size() == 5);
  CHECK_THROWS_AS(random_edit(program_outline{{{1, 0, false}}}, rng), std::invalid_argument);
}

TEST_CASE("edit kinds are read as a comma-separated set and limit the random edits", "[engine][program_edit]") {
  CHECK(parse_edit_kinds("copy,delete") == gevo_ml_edit_kinds);
  CHECK(parse_edit_kinds("copy,delete,move,swap,replace") == all_edit_kinds);
  CHECK(parse_edit_kinds("swap") == edit_kind_bit(edit_kind::swap_operands));
  CHECK(edit_kinds_text(gevo_ml_edit_kinds) == "copy,delete");
  CHECK(edit_kinds_text(parse_edit_kinds("replace,move")) == "move,replace");
  CHECK_THROWS_WITH(parse_edit_kinds("copy,insert"),
                    Catch::Contains("edit_kinds") && Catch::Contains("'insert'") && Catch::Contains("copy,delete"));
  CHECK_THROWS_WITH(parse_edit_kinds("copy,copy"), Catch::Contains("twice"));
  CHECK_THROWS_WITH(parse_edit_kinds(""), Catch::Contains("''"));
  CHECK_THROWS_WITH(parse_edit_kinds("copy,"), Catch::Contains("''"));
  rng_type rng(9);
  std::set<edit_kind> kinds;
  for (int n = 0; n < 300; ++n) kinds.insert(random_edit(small_outline(), rng, gevo_ml_edit_kinds).kind);
  CHECK(kinds == std::set<edit_kind>{edit_kind::copy, edit_kind::remove});
  // Swap needs an instruction with two operands: none here.
  CHECK_THROWS_WITH(random_edit(program_outline{{{1, 1, true}}}, rng, edit_kind_bit(edit_kind::swap_operands)),
                    Catch::Contains("swap"));
}

TEST_CASE("gevo draws GEVO-ML's copy and delete unless edit_kinds says otherwise", "[engine][program_edit]") {
  auto kinds_proposed = [](std::map<std::string, double> hyper) {
    strategy_options options;
    options.seed = 3;
    options.hyper = std::move(hyper);
    auto gevo = make_program_edit_strategy(small_outline(), options);
    std::set<edit_kind> kinds;
    for (auto& config : gevo->propose(40))
      for (auto& e : decode(config)) kinds.insert(e.kind);
    return kinds;
  };
  CHECK(program_edit_defaults().at("edit_kinds") == gevo_ml_edit_kinds);
  CHECK(kinds_proposed({}) == std::set<edit_kind>{edit_kind::copy, edit_kind::remove});
  CHECK(kinds_proposed({{"edit_kinds", all_edit_kinds}}).size() == 5);
  CHECK(kinds_proposed({{"edit_kinds", edit_kind_bit(edit_kind::move)}}) == std::set<edit_kind>{edit_kind::move});
  strategy_options bad;
  for (double value : {0.0, 32.0, 2.5, -1.0}) {
    bad.hyper = {{"edit_kinds", value}};
    CHECK_THROWS_WITH(make_program_edit_strategy(small_outline(), bad),
                      Catch::Contains("edit_kinds") && Catch::Contains("copy,delete"));
  }
  bad.hyper = {{"edit_kinds", edit_kind_bit(edit_kind::swap_operands)}};
  CHECK_THROWS_WITH(make_program_edit_strategy(program_outline{{{1, 1, true}}}, bad), Catch::Contains("swap"));
}

TEST_CASE("messy crossover children are made of their parents' edits", "[engine][program_edit]") {
  rng_type rng(7);
  auto parents = all_kinds();
  edit_list a(parents.begin(), parents.begin() + 2), b(parents.begin() + 2, parents.end());
  std::set<std::size_t> cuts;
  for (int n = 0; n < 200; ++n) {
    auto [c, d] = messy_crossover(a, b, rng);
    edit_list both = c;
    both.insert(both.end(), d.begin(), d.end());
    CHECK(descriptions(both) == descriptions(parents));
    cuts.insert(c.size());
  }
  CHECK(cuts.size() == 6);  // every cut point 0..5 occurs
  rng_type r1(3), r2(3);
  CHECK(messy_crossover(a, b, r1) == messy_crossover(a, b, r2));
}

namespace {
trial_result edit_result_of(const configuration& config, double time_ms, double error) {
  trial_result r;
  r.config = config;
  r.state = status::ok;
  r.time_ms = time_ms;
  r.objectives = {time_ms, error};
  return r;
}
}  // namespace

TEST_CASE("gevo starts from the original and three-edit copies of it", "[engine][program_edit]") {
  strategy_options options;
  options.seed = 5;
  options.hyper = {{"population", 4}};
  auto gevo = make_program_edit_strategy(small_outline(), options);
  CHECK(gevo->name() == "gevo");
  CHECK(gevo->propose(0).empty());
  auto first = gevo->propose(6);
  REQUIRE(first.size() == 6);
  CHECK(first[0].empty());  // the original
  std::set<configuration> distinct(first.begin(), first.end());
  CHECK(distinct.size() == 6);
  for (std::size_t i = 1; i < first.size(); ++i) CHECK(decode(first[i]).size() == 3);
  // Same seed, same proposals.
  auto again = make_program_edit_strategy(small_outline(), options);
  CHECK(again->propose(6) == first);
}

TEST_CASE("gevo breeds from the NSGA-II survivors of the pool", "[engine][program_edit]") {
  strategy_options options;
  options.seed = 11;
  options.hyper = {{"population", 3}, {"crossover", 0}, {"mutation", 0}};
  auto gevo = make_program_edit_strategy(small_outline(), options);
  auto initial = gevo->propose(7);
  REQUIRE(initial.size() == 7);
  // Three non-dominated results and four dominated ones (one a failure).
  gevo->observe(edit_result_of(initial[0], 1.0, 0.5));
  gevo->observe(edit_result_of(initial[1], 2.0, 0.2));
  gevo->observe(edit_result_of(initial[2], 3.0, 0.1));
  gevo->observe(edit_result_of(initial[3], 4.0, 0.6));
  gevo->observe(edit_result_of(initial[4], 5.0, 0.7));
  gevo->observe(edit_result_of(initial[5], 6.0, 0.8));
  trial_result failed;
  failed.config = initial[6];
  failed.state = status::runtime_error;
  gevo->observe(failed);
  std::vector<edit_list> survivors = {decode(initial[0]), decode(initial[1]), decode(initial[2])};
  auto children = gevo->propose(20);
  REQUIRE(children.size() == 20);
  for (auto& child : children) {
    auto edits = decode(child);
    // No crossover, no mutation: a copy of a survivor, made new by appended random edits.
    bool from_survivor = false;
    for (auto& s : survivors)
      from_survivor |= edits.size() > s.size() && edit_list(edits.begin(), edits.begin() + s.size()) == s;
    CHECK(from_survivor);
    CHECK(std::find(initial.begin(), initial.end(), child) == initial.end());
  }
}

TEST_CASE("gevo draws a list again until the program's side says it applies, a bounded number of times",
          "[engine][program_edit]") {
  // Edits of instruction 10 "do not apply" here.
  std::size_t asked = 0;
  auto no_ten = [&asked](const edit_list& edits) {
    ++asked;
    return std::none_of(edits.begin(), edits.end(), [](const program_edit& e) { return e.target == 10; });
  };
  strategy_options options;
  options.seed = 13;
  options.hyper = {{"population", 3}};
  auto gevo = make_program_edit_strategy(small_outline(), options, no_ten);
  auto first = gevo->propose(12);
  REQUIRE(first.size() == 12);
  for (auto& config : first) CHECK(no_ten(decode(config)));
  asked = 0;
  for (std::size_t i = 0; i < first.size(); ++i) gevo->observe(edit_result_of(first[i], 1.0 + i, 0.5 - 0.01 * i));
  auto bred = gevo->propose(30);
  REQUIRE(bred.size() == 30);
  for (auto& config : bred) CHECK(no_ten(decode(config)));
  CHECK(asked > 2 * 30);  // some were drawn again (and each proposal is asked about above)

  // Without a check, or with max_draws 1, the same seed hands out some lists with edits of 10.
  auto has_ten = [](const std::vector<configuration>& configs) {
    return std::any_of(configs.begin(), configs.end(), [](const configuration& c) {
      auto edits = decode(c);
      return std::any_of(edits.begin(), edits.end(), [](const program_edit& e) { return e.target == 10; });
    });
  };
  CHECK(has_ten(make_program_edit_strategy(small_outline(), options)->propose(12)));
  options.hyper["max_draws"] = 1;
  asked = 0;
  CHECK(has_ten(make_program_edit_strategy(small_outline(), options, no_ten)->propose(12)));
  CHECK(asked == 0);

  // A check that refuses everything: each list is drawn max_draws times, then handed out.
  options.hyper["max_draws"] = 4;
  std::size_t refused = 0;
  auto never = make_program_edit_strategy(small_outline(), options, [&refused](const edit_list&) {
    ++refused;
    return false;
  });
  auto handed = never->propose(3);
  CHECK(handed.size() == 3);
  CHECK(refused == 2 * 4);  // the original is not checked
  options.hyper["max_draws"] = 0;
  CHECK_THROWS_WITH(make_program_edit_strategy(small_outline(), options), Catch::Contains("max_draws"));
}

TEST_CASE("gevo refuses bad hyperparameters and outlines", "[engine][program_edit]") {
  strategy_options options;
  options.hyper = {{"generations", 3}};
  CHECK_THROWS_WITH(make_program_edit_strategy(small_outline(), options), Catch::Contains("'generations'"));
  options.hyper = {{"crossover", 1.5}};
  CHECK_THROWS_WITH(make_program_edit_strategy(small_outline(), options), Catch::Contains("[0, 1]"));
  options.hyper = {{"population", 1}};
  CHECK_THROWS_AS(make_program_edit_strategy(small_outline(), options), std::invalid_argument);
  CHECK_THROWS_AS(make_program_edit_strategy(program_outline{{{1, 0, false}}}, {}), std::invalid_argument);
}

TEST_CASE("environmental selection and two-objective hypervolume by hand", "[engine][pareto]") {
  std::vector<std::vector<double>> pts = {{1, 5}, {2, 3}, {4, 1}, {3, 4}, {5, 5}, {2, 3.5}};
  auto keep = environmental_selection(pts, 4);
  std::sort(keep.begin(), keep.end());
  CHECK(keep == std::vector<std::size_t>{0, 1, 2, 5});  // front {0, 1, 2}, then {5}: (2, 3.5) dominates (3, 4)
  CHECK(environmental_selection(pts, 10).size() == 6);
  // Reference (6, 6): (1,5) adds 5*1, (2,3) 4*2, (4,1) 2*2.
  CHECK(hypervolume_2d({{1, 5}, {2, 3}, {4, 1}, {3, 4}}, {6, 6}) == Approx(5 + 8 + 4));
  CHECK(hypervolume_2d({{7, 1}}, {6, 6}) == 0);
  CHECK(hypervolume_2d({}, {6, 6}) == 0);
}
