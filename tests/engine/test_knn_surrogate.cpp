#include <catch2/catch.hpp>
#include <random>

#include "tune/engine/surrogate.hpp"

using namespace tune;

namespace {
search_space_ptr line_space() {
  return std::make_shared<search_space>(std::vector<parameter_ptr>{make_discrete_parameter("x", {0, 1, 2, 3, 4, 5}),
                                                                   make_discrete_parameter("y", {0, 1, 2})});
}
}  // namespace

TEST_CASE("canberra distance counts 0/0 terms as 0", "[engine][surrogate]") {
  double a[] = {0, 1, 3}, b[] = {0, 3, 1};
  CHECK(canberra_distance(a, b, 3) == Approx(0.5 + 0.5));
  CHECK(canberra_distance(a, a, 3) == 0.0);
}

TEST_CASE("k-NN returns the measured value on an exact match", "[engine][surrogate]") {
  knn_surrogate s(line_space(), 3);
  CHECK(s.predict({1, 1}) == 0.0);  // nothing known yet
  s.add({1, 0}, 10);
  s.add({3, 0}, 30);
  CHECK(s.predict({1, 0}) == 10);
  s.add({1, 0}, 12);  // observed again: replaced
  CHECK(s.size() == 2);
  CHECK(s.predict({1, 0}) == 12);
}

TEST_CASE("k-NN knows its rows and remembers answers by value where the space has no keys", "[engine][surrogate]") {
  // 20 parameters of 16 values: 2^80 configurations, beyond the 64-bit keys,
  // few enough values for the value tables.
  std::vector<parameter_ptr> params;
  for (int p = 0; p < 20; ++p) {
    std::vector<double> values;
    for (int v = 0; v < 16; ++v) values.push_back(1.0 + v);
    params.push_back(make_discrete_parameter("p" + std::to_string(p), values));
  }
  auto space = std::make_shared<search_space>(params);
  REQUIRE_FALSE(space->cartesian_size());
  knn_surrogate s(space, 3);
  rng_type draw(43);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  auto first = space->draw(draw);
  s.add(first, 5);
  s.add(first, 6);  // observed again: replaced
  CHECK(s.size() == 1);
  CHECK(s.predict(first) == 6);
  std::vector<configuration> queries;
  for (int q = 0; q < 10; ++q) queries.push_back(space->draw(draw));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 30; ++i) s.add(space->draw(draw), u(draw));
    for (const auto& c : queries)
      REQUIRE(s.predict(c, knn_search::value_tables) == s.predict(c, knn_search::exhaustive));
  }
  CHECK(s.predict(first) == 6);
}

TEST_CASE("k-NN averages neighbours weighted by 1 / Canberra distance", "[engine][surrogate]") {
  knn_surrogate s(line_space(), 2);
  s.add({1, 0}, 10);  // features (1, 0)
  s.add({3, 0}, 30);  // features (3, 0)
  s.add({5, 2}, 99);  // far: not among the 2 nearest of (2, 0)
  // d((2,0),(1,0)) = 1/3, d((2,0),(3,0)) = 1/5, the y terms are 0/0.
  CHECK(s.predict({2, 0}) == Approx((10 * 3 + 30 * 5) / 8.0));
  // k = 3: d((2,0),(5,2)) = 3/7 + 1 = 10/7.
  knn_surrogate t(line_space(), 3);
  t.add({1, 0}, 10);
  t.add({3, 0}, 30);
  t.add({5, 2}, 99);
  CHECK(t.predict({2, 0}) == Approx((10 * 3 + 30 * 5 + 99 * 0.7) / (3 + 5 + 0.7)));
  CHECK_THROWS_AS(knn_surrogate(line_space(), 0), std::invalid_argument);
}

TEST_CASE("k-d tree and value-table searches equal exhaustive search on random data", "[engine][surrogate]") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  std::vector<parameter_ptr> params;
  for (int p = 0; p < 5; ++p) {
    std::vector<double> values;
    for (int i = 0; i < 400; ++i) values.push_back(i * 0.25 + u(rng) * 1e-3);
    std::sort(values.begin(), values.end());
    params.push_back(make_discrete_parameter("p" + std::to_string(p), values));
  }
  auto space = std::make_shared<search_space>(params);
  knn_surrogate s(space, 9);
  rng_type draw(11);
  // Interleaved adds and queries exercise the tree rebuilds and the tail.
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 700; ++i) s.add(space->draw(draw), u(rng));
    for (int q = 0; q < 100; ++q) {
      auto c = space->draw(draw);
      double exhaustive = s.predict(c, knn_search::exhaustive);
      CHECK(s.predict(c, knn_search::kd_tree) == Approx(exhaustive).epsilon(1e-12));
      CHECK(s.predict(c, knn_search::value_tables) == Approx(exhaustive).epsilon(1e-12));
    }
  }
}

TEST_CASE("value tables break ties like the exhaustive scan, with more parameters than the fixed loops",
          "[engine][surrogate]") {
  // Ten and sixteen parameters with three small values each: many
  // observations lie at exactly the same distance. Six parameters key the
  // buckets (3^6 = 729 keys); the other four are scanned by a fixed loop,
  // the other ten by the loop that leaves a row once it is too far.
  for (int count : {10, 16}) {
    std::vector<parameter_ptr> params;
    for (int p = 0; p < count; ++p) params.push_back(make_discrete_parameter("p" + std::to_string(p), {1, 2, 4}));
    auto space = std::make_shared<search_space>(params);
    for (std::size_t k : {1, 9}) {
      knn_surrogate s(space, k);
      rng_type draw(5);
      std::uniform_real_distribution<double> u(0.0, 100.0);
      for (int i = 0; i < 3000; ++i) s.add(space->draw(draw), u(draw));
      for (int q = 0; q < 200; ++q) {
        auto c = space->draw(draw);
        // Exact equality: the same neighbours, ties resolved to the same rows.
        INFO("parameters " << count << ", k " << k);
        CHECK(s.predict(c, knn_search::value_tables) == s.predict(c, knn_search::exhaustive));
      }
    }
  }
}

TEST_CASE("value tables equal exhaustive search with one to five parameters, on clustered observations with ties",
          "[engine][surrogate]") {
  // One to five parameters of ten values: the buckets are keyed by the
  // first one, two or three of them, and none, one or two are left to scan.
  // Observations cluster around a few centres, as an evolving population's
  // do, so most buckets are skipped and many neighbours lie at equal
  // distances.
  for (int count = 1; count <= 5; ++count) {
    std::vector<parameter_ptr> params;
    for (int p = 0; p < count; ++p)
      params.push_back(make_discrete_parameter("p" + std::to_string(p), {1, 2, 3, 4, 6, 8, 12, 16, 24, 32}));
    auto space = std::make_shared<search_space>(params);
    for (std::size_t k : {1, 4, 9}) {
      knn_surrogate s(space, k);
      rng_type draw(static_cast<std::uint64_t>(17 * count + k));
      std::uniform_real_distribution<double> u(0.0, 100.0);
      std::vector<configuration> centres;
      for (int c = 0; c < 3; ++c) centres.push_back(space->draw(draw));
      auto near = [&] {
        auto c = centres[draw() % centres.size()];
        for (auto& v : c)
          if (draw() % 3 == 0) v = std::min<std::uint64_t>(9, v + draw() % 3);
        return c;
      };
      for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 150; ++i) s.add(near(), u(draw));
        for (int q = 0; q < 60; ++q) {
          auto c = q % 2 ? near() : space->draw(draw);
          INFO("parameters " << count << ", k " << k);
          CHECK(s.predict(c, knn_search::value_tables) == s.predict(c, knn_search::exhaustive));
        }
      }
    }
  }
}

TEST_CASE("value tables equal exhaustive search with single-value parameters first, among and after the others",
          "[engine][surrogate]") {
  // A parameter with one value adds 0 to every distance and is left out of
  // the value-table search: the answers must not change. The layouts put it
  // where the buckets' key is taken, among the scanned parameters, last, and
  // make every parameter single-valued.
  auto one = [](const std::string& name) { return make_discrete_parameter(name, {32}); };
  auto many = [](const std::string& name) { return make_discrete_parameter(name, {1, 2, 4, 8, 16}); };
  std::vector<std::vector<parameter_ptr>> layouts = {
      {one("a"), many("b"), many("c")},
      {many("a"), one("b"), many("c"), one("d"), many("e"), many("f"), many("g"), one("h"), many("i")},
      {many("a"), many("b"), one("c")},
      {one("a"), one("b")}};
  for (std::size_t l = 0; l < layouts.size(); ++l) {
    auto space = std::make_shared<search_space>(layouts[l]);
    knn_surrogate s(space, 3);
    rng_type draw(l + 5);
    std::uniform_real_distribution<double> u(0.0, 10.0);
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 40; ++i) s.add(space->draw(draw), u(draw));
      for (int q = 0; q < 40; ++q) {
        auto c = space->draw(draw);
        INFO("layout " << l << ", round " << round);
        CHECK(s.predict(c, knn_search::value_tables) == s.predict(c, knn_search::exhaustive));
      }
    }
    // Out of range in a single-value parameter: refused, as for any other.
    configuration bad(space->dimension(), 0);
    for (std::size_t p = 0; p < bad.size(); ++p)
      if (layouts[l][p]->cardinality() == 1) bad[p] = 1;
    CHECK_THROWS_AS(s.predict(bad, knn_search::value_tables), std::out_of_range);
  }
}

TEST_CASE("value tables equal exhaustive search with few buckets and with most keys taken, asked again as rows come",
          "[engine][surrogate]") {
  // Two keyed parameters of 32 values and three scanned: 1,024 keys. Few
  // buckets take their key sums one by one; once most keys have rows, from a
  // table of every key's sum. The same queries are asked again as rows come
  // (the catch-ups), a third of them with a key that has no rows yet, and
  // each answer must be the exhaustive scan's.
  std::vector<double> wide;
  for (int i = 0; i < 32; ++i) wide.push_back(1.0 + 3 * i);
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{
      make_discrete_parameter("a", wide), make_discrete_parameter("b", wide), make_discrete_parameter("c", {1, 2, 4}),
      make_discrete_parameter("d", {1, 5}), make_discrete_parameter("e", {2, 3, 4, 5})});
  knn_surrogate s(space, 5);
  rng_type draw(41);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  std::vector<configuration> queries;
  for (int q = 0; q < 30; ++q) {
    auto c = space->draw(draw);
    if (q % 3 == 0) c[0] = 31, c[1] = static_cast<std::uint64_t>(q % 32);  // rows avoid a = 31 until the end
    queries.push_back(c);
  }
  auto draw_row = [&](bool last_column) {
    auto c = space->draw(draw);
    if (!last_column && c[0] == 31) c[0] = 30;
    return c;
  };
  for (int added : {20, 5, 300, 2000, 1, 40}) {
    for (int i = 0; i < added; ++i) s.add(draw_row(added == 40), u(draw));
    for (const auto& c : queries) {
      INFO(s.size() << " rows");
      REQUIRE(s.predict(c, knn_search::value_tables) == s.predict(c, knn_search::exhaustive));
    }
  }
}

TEST_CASE("value tables equal exhaustive search when a parameter has too many values to keep its tables",
          "[engine][surrogate]") {
  // 2,500 values: every value's table of that parameter would take 50 MB, so
  // tables are computed per query instead of kept (the other path).
  std::vector<double> many;
  for (int i = 0; i < 2500; ++i) many.push_back(1.0 + i);
  auto space = std::make_shared<search_space>(std::vector<parameter_ptr>{make_discrete_parameter("a", {1, 2, 4, 8}),
                                                                         make_discrete_parameter("wide", many),
                                                                         make_discrete_parameter("b", {1, 3, 9})});
  knn_surrogate s(space, 9);
  rng_type draw(23);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  for (int i = 0; i < 2000; ++i) s.add(space->draw(draw), u(draw));
  for (int q = 0; q < 200; ++q) {
    auto c = space->draw(draw);
    CHECK(s.predict(c, knn_search::value_tables) == s.predict(c, knn_search::exhaustive));
  }
}

TEST_CASE("remembered answers equal a fresh search as rows are added, values replaced and generations roll over",
          "[engine][surrogate]") {
  // Twelve parameters of three values (3^6 keys, six left to scan). The same
  // queries are asked again after one row, after a few, and after more rows
  // than there are buckets (the bucketed catch-up); more than two
  // generations of distinct queries pass between some of them. A surrogate
  // that never saw a query, holding the same rows, must predict the same
  // number, bit for bit.
  std::vector<parameter_ptr> params;
  for (int p = 0; p < 12; ++p) params.push_back(make_discrete_parameter("p" + std::to_string(p), {1, 2, 4}));
  auto space = std::make_shared<search_space>(params);
  knn_surrogate remembering(space, 9);
  rng_type draw(31);
  std::uniform_real_distribution<double> u(0.0, 100.0);
  std::vector<std::pair<configuration, double>> rows;
  auto add = [&](const configuration& c, double v) {
    remembering.add(c, v);
    rows.emplace_back(c, v);
  };
  auto check = [&](const configuration& c) {
    knn_surrogate fresh(space, 9);
    for (auto& [config, value] : rows) fresh.add(config, value);
    REQUIRE(remembering.predict(c) == fresh.predict(c));
  };
  for (int i = 0; i < 50; ++i) add(space->draw(draw), u(draw));
  std::vector<configuration> queries;
  for (int q = 0; q < 20; ++q) queries.push_back(space->draw(draw));
  for (int round = 0; round < 12; ++round) {
    // 1, 7, then 800 rows (more than the 729 possible buckets), in turn; the
    // first of them a query with its last parameter changed, so that it is
    // among that query's nearest (each row since must be offered).
    int added = round % 3 == 0 ? 1 : round % 3 == 1 ? 7 : 800;
    for (int i = 0; i < added; ++i) {
      auto c = space->draw(draw);
      if (i == 0) {
        c = queries[static_cast<std::size_t>(round) % queries.size()];
        c.back() = (c.back() + 1) % 3;
      }
      add(c, u(draw));
    }
    // A row observed again with a new value: its neighbours' predictions move.
    if (round == 5) {
      rows.emplace_back(rows[60].first, 1e6);
      remembering.add(rows[60].first, 1e6);
    }
    // Over two generations of other queries in between.
    if (round == 7)
      for (int i = 0; i < 9000; ++i) remembering.predict(space->draw(draw));
    for (auto& c : queries) check(c);
  }
  // A remembered query that is then observed returns its value.
  add(queries.front(), 42);
  CHECK(remembering.predict(queries.front()) == 42);
}
