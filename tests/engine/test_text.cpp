#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/text.hpp"

using tune::join;

TEST_CASE("join separates items and adds nothing around them", "[engine][text]") {
  CHECK(join(std::vector<std::string>{"opevo", "bo", "random"}) == "opevo, bo, random");
  CHECK(join(std::vector<std::string>{"one"}) == "one");
  CHECK(join(std::vector<std::string>{}).empty());
  CHECK(join(std::vector<std::string_view>{"a", "b"}, " | ") == "a | b");
  // Empty items keep their place: the separators count the items.
  CHECK(join(std::vector<std::string>{"", "", ""}, ",") == ",,");
}
