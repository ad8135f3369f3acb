#include "outbox.hpp"

#include <algorithm>

#include "tune/storage/event_stream.hpp"

namespace tune::dashboard {

message_kind kind_of(const std::string& event_type) {
  if (event_type == "trial_finished") return message_kind::trial;
  if (event_type == "progress") return message_kind::progress;
  return message_kind::other;
}

std::string dropped_notice(std::uint64_t dropped) {
  return R"({"type":"dropped","schema":)" + std::to_string(storage::event_schema_version) + R"(,"dropped":)" +
         std::to_string(dropped) + "}";
}

outbox::outbox(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 2)) {}

bool outbox::push(shared_text message, message_kind kind) {
  if (kind == message_kind::progress) {
    // Totals: only the newest one matters, so it replaces a queued one and
    // moves to the end (its place in time).
    auto old =
        std::find_if(queue_.begin(), queue_.end(), [](const entry& e) { return e.kind == message_kind::progress; });
    if (old != queue_.end()) {
      queue_.erase(old);
      ++coalesced_;
    }
  }
  if (queue_.size() >= capacity_) {
    if (kind == message_kind::trial) {
      ++dropped_;
      return false;
    }
    auto trial =
        std::find_if(queue_.begin(), queue_.end(), [](const entry& e) { return e.kind == message_kind::trial; });
    if (trial == queue_.end()) {
      ++dropped_;
      return false;
    }
    queue_.erase(trial);
    ++dropped_;
  }
  queue_.push_back({std::move(message), kind});
  return true;
}

shared_text outbox::next() {
  if (notice_due()) {
    notified_ = dropped_;
    return std::make_shared<const std::string>(dropped_notice(dropped_));
  }
  if (queue_.empty()) return nullptr;
  auto text = std::move(queue_.front().text);
  queue_.pop_front();
  return text;
}

}  // namespace tune::dashboard
