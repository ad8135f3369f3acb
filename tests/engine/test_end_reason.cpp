// How a run ended: one vocabulary, each word read back as the reason it names
// and nothing else accepted.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "tune/engine/end_reason.hpp"

using namespace tune;

TEST_CASE("end reasons: every reason's text reads back as that reason", "[engine]") {
  std::set<std::string> words;
  for (auto reason : all_end_reasons) {
    std::string text(to_string(reason));
    INFO(text);
    CHECK(words.insert(text).second);
    CHECK(end_reason_from_string(text) == reason);
    CHECK(std::string(end_reason_names()).find(text) != std::string::npos);
  }
  CHECK(words == std::set<std::string>{"budget", "time", "exhausted", "stopped", "failed"});
}

TEST_CASE("end reasons: other text, an older file's word included, is no reason", "[engine]") {
  for (const char* text : {"", "interrupted", "error", "finished", "running", "Budget", "budget ", "stop"})
    CHECK_FALSE(end_reason_from_string(text));
}
