// key_set against std::unordered_set: the same answers for any keys,
// including the one that marks an empty slot and keys that share low bits.
#include <catch2/catch.hpp>
#include <random>
#include <unordered_set>

#include "tune/engine/key_set.hpp"

using namespace tune;

TEST_CASE("an empty key set holds nothing, not even the all-ones or zero key", "[engine][key_set]") {
  key_set keys;
  CHECK(keys.empty());
  CHECK_FALSE(keys.contains(0));
  CHECK_FALSE(keys.contains(~std::uint64_t{0}));
  CHECK(keys.size() == 0);
}

TEST_CASE("a key set answers as std::unordered_set does, through many growths", "[engine][key_set]") {
  // Keys of three kinds: small (flat indices), multiples of 2^40 (equal low
  // bits) and any; the all-ones key and zero among them.
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    key_set keys;
    std::unordered_set<std::uint64_t> reference;
    auto draw = [&] {
      switch (rng() % 4) {
        case 0:
          return rng() % 5000;
        case 1:
          return (rng() % 5000) << 40;
        case 2:
          return rng() % 2 ? ~std::uint64_t{0} : std::uint64_t{0};
        default:
          return rng();
      }
    };
    for (int i = 0; i < 40000; ++i) {
      auto key = draw();
      if (i % 3 == 0) {
        INFO("seed " << seed << ", insert " << key);
        REQUIRE(keys.insert(key) == reference.insert(key).second);
      } else {
        INFO("seed " << seed << ", look up " << key);
        REQUIRE(keys.contains(key) == (reference.count(key) > 0));
      }
      REQUIRE(keys.size() == reference.size());
    }
    for (auto key : reference) CHECK(keys.contains(key));
    CHECK_FALSE(keys.empty());
  }
}
