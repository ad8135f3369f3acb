// strategy_base's random top-up: uniform unseen valid draws, also once most of
// the space is seen (the list of unseen members it keeps from then on).
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "tune/engine/strategy_base.hpp"

using namespace tune;

namespace {

/// A strategy that generates nothing and lets a test draw from the top-up.
class top_up_only final : public strategy_base {
 public:
  explicit top_up_only(search_space_ptr space) : strategy_base("top_up_only", std::move(space), {}, {}) {}
  std::optional<configuration> draw() { return random_unseen(); }

 protected:
  void generate(std::size_t, std::vector<configuration>&) override {}
  void on_result(const trial_result&, double) override {}
};

trial_result ok_result(const configuration& config) {
  trial_result r;
  r.config = config;
  r.state = status::ok;
  r.time_ms = 1.0;
  return r;
}

}  // namespace

TEST_CASE("the random top-up draws only unseen configurations once most of the space is seen, until none is left",
          "[engine][strategy]") {
  std::vector<double> as, bs;
  for (int i = 0; i < 64; ++i) as.push_back(i);
  for (int i = 0; i < 16; ++i) bs.push_back(i);
  auto space = std::make_shared<search_space>(
      std::vector<parameter_ptr>{make_discrete_parameter("a", as), make_discrete_parameter("b", bs)});
  top_up_only s(space);
  const auto& all = *space->enumerate_valid();
  REQUIRE(all.size() == 1024);
  // All but three seen: rejection sampling (64 draws) mostly fails and the
  // list of unseen members takes over at once.
  std::set<configuration> unseen(all.end() - 3, all.end());
  for (auto it = all.begin(); it != all.end() - 3; ++it) s.observe(ok_result(*it));
  std::map<configuration, int> drawn;
  for (int i = 0; i < 3000; ++i) {
    auto c = s.draw();
    REQUIRE(c);
    REQUIRE(unseen.count(*c) == 1);
    ++drawn[*c];
  }
  // Uniform among the three: each about 1,000 times.
  for (const auto& [config, count] : drawn) CHECK((count > 850 && count < 1150));
  CHECK(drawn.size() == 3);
  // One more seen after the list was made: never drawn again.
  s.observe(ok_result(*unseen.begin()));
  for (int i = 0; i < 200; ++i) CHECK(*s.draw() != *unseen.begin());
  // All seen: nothing to draw.
  for (const auto& c : unseen) s.observe(ok_result(c));
  CHECK_FALSE(s.draw());
}

TEST_CASE("an out-of-range configuration observed on resume hides no valid one", "[engine][strategy]") {
  // 2 x 3 values: {0, 3} is out of range, and its mixed-radix index (3) is
  // that of {1, 0}. Marking it seen must not mark {1, 0}.
  auto space = std::make_shared<search_space>(
      std::vector<parameter_ptr>{make_discrete_parameter("a", {1, 2}), make_discrete_parameter("b", {1, 2, 3})});
  top_up_only s(space);
  s.observe(ok_result({0, 3}));
  s.observe(ok_result({0, 0}));
  std::set<configuration> drawn;
  for (auto& c : s.propose(10)) CHECK(drawn.insert(c).second);
  CHECK(drawn == std::set<configuration>{{0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}});
  CHECK(s.propose(1).empty());
}

TEST_CASE("a space too large for keys still proposes each configuration once", "[engine][strategy]") {
  // Five permutations of 12: beyond 64 bits, seen configurations are kept by
  // value. Restricted to 40 members, every one is proposed once.
  std::vector<parameter_ptr> params;
  for (int i = 0; i < 5; ++i) params.push_back(make_permutation_parameter("p" + std::to_string(i), 12));
  auto space = std::make_shared<search_space>(params);
  std::vector<configuration> members;
  for (std::uint64_t i = 0; i < 40; ++i) members.push_back({i, i * 3, i * 7, i * 11, i * 13});
  space->restrict_to(members);
  REQUIRE_FALSE(space->key(members.front()).has_value());
  top_up_only s(space);
  s.observe(ok_result(members.front()));
  std::set<configuration> drawn;
  for (auto& c : s.propose(100)) CHECK(drawn.insert(c).second);
  CHECK(drawn.size() == 39);
  CHECK(drawn.count(members.front()) == 0);
}
