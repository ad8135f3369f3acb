#include <catch2/catch.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "outbox.hpp"
#include "tune/storage/event_stream.hpp"

using namespace tune::dashboard;

namespace {

shared_text text(const std::string& s) { return std::make_shared<const std::string>(s); }

std::vector<std::string> drain(outbox& box) {
  std::vector<std::string> out;
  while (auto m = box.next()) out.push_back(*m);
  return out;
}

}  // namespace

TEST_CASE("an outbox hands messages out in the order they came") {
  outbox box(8);
  for (int i = 0; i < 5; ++i) CHECK(box.push(text(std::string("t").append(std::to_string(i))), message_kind::trial));
  CHECK(drain(box) == std::vector<std::string>{"t0", "t1", "t2", "t3", "t4"});
  CHECK(box.next() == nullptr);
  CHECK(box.dropped() == 0);
}

TEST_CASE("a newer progress replaces a queued one and moves to its place in time") {
  outbox box(8);
  box.push(text("p1"), message_kind::progress);
  box.push(text("t1"), message_kind::trial);
  box.push(text("p2"), message_kind::progress);
  box.push(text("t2"), message_kind::trial);
  CHECK(drain(box) == std::vector<std::string>{"t1", "p2", "t2"});
  CHECK(box.coalesced() == 1);
  CHECK(box.dropped() == 0);
}

TEST_CASE("a full outbox drops trials and makes room for other events") {
  outbox box(4);
  for (int i = 0; i < 4; ++i) box.push(text(std::string("t").append(std::to_string(i))), message_kind::trial);
  CHECK_FALSE(box.push(text("t4"), message_kind::trial));
  CHECK(box.push(text("best"), message_kind::other));  // evicts t0
  CHECK(box.dropped() == 2);
  auto first = box.next();
  REQUIRE(first);
  // Still full: the notice waits until the outbox is half empty.
  CHECK(*first == "t1");
  auto out = drain(box);
  REQUIRE(out.size() == 4);
  CHECK(out[0] == "t2");
  auto notice = nlohmann::json::parse(out[1]);
  CHECK(notice["type"] == "dropped");
  CHECK(notice["dropped"] == 2);
  CHECK(out[2] == "t3");
  CHECK(out[3] == "best");
}

TEST_CASE("an outbox full of events that may not be dropped drops the newcomer") {
  outbox box(2);
  box.push(text("a"), message_kind::other);
  box.push(text("b"), message_kind::other);
  CHECK_FALSE(box.push(text("c"), message_kind::other));
  CHECK(box.dropped() == 1);
}

TEST_CASE("event types map to outbox kinds") {
  CHECK(kind_of("trial_finished") == message_kind::trial);
  CHECK(kind_of("progress") == message_kind::progress);
  CHECK(kind_of("new_best") == message_kind::other);
  CHECK(kind_of("run_finished") == message_kind::other);
  CHECK(nlohmann::json::parse(dropped_notice(7)) ==
        nlohmann::json{{"type", "dropped"}, {"schema", tune::storage::event_schema_version}, {"dropped", 7}});
}

TEST_CASE("an outbox is ready while a message or a drop notice is due and says how long the next message is") {
  outbox box(2);
  CHECK_FALSE(box.ready());
  CHECK(box.front_size() == 0);
  box.push(text("t0"), message_kind::trial);
  box.push(text("t1!"), message_kind::trial);
  CHECK_FALSE(box.push(text("t2"), message_kind::trial));
  CHECK(box.front_size() == 2);
  REQUIRE(box.next());
  // Half empty: the notice of the drop comes before the queued t1!.
  CHECK(box.ready());
  auto notice = box.next();
  REQUIRE(notice);
  CHECK(nlohmann::json::parse(*notice)["type"] == "dropped");
  CHECK(box.ready());
  CHECK(box.front_size() == 3);
  REQUIRE(box.next());
  CHECK_FALSE(box.ready());
  CHECK_FALSE(box.next());
}
