#pragma once
// One WebSocket client's queue of messages not yet written: bounded, with
// `progress` events coalesced and drops counted (server.hpp explains why).
//
//   push(message, kind) ──> [queued…] ──next()──> being written ──done()
//
// When full, a `trial` message is dropped; any other kind (run_started,
// new_best, run_finished: few, and the page needs them) takes the place of
// the oldest queued trial instead, which is then the one dropped. After a
// drop, next() hands out a {"type":"dropped"} notice as soon as the outbox is
// at most half full, so the client learns how many it missed.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

namespace tune::dashboard {

using shared_text = std::shared_ptr<const std::string>;

enum class message_kind {
  trial,     ///< trial_finished: droppable
  progress,  ///< replaced by a newer progress while still queued
  other,     ///< never dropped while a trial can make room
};

/// The kind of an event type ("trial_finished", "progress", …).
message_kind kind_of(const std::string& event_type);

class outbox {
 public:
  explicit outbox(std::size_t capacity);

  /// Queues a message; returns false when it was dropped.
  bool push(shared_text message, message_kind kind);
  /// The next message to write, or nullptr when none is queued.
  shared_text next();

  std::size_t size() const { return queue_.size(); }
  /// Whether next() would hand out a message (a queued one or a drop notice).
  bool ready() const { return !queue_.empty() || notice_due(); }
  /// Bytes of the oldest queued message (0 when none is): what the next
  /// next() hands out, unless a drop notice (a few dozen bytes) comes first.
  std::size_t front_size() const { return queue_.empty() ? 0 : queue_.front().text->size(); }
  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t coalesced() const { return coalesced_; }

 private:
  struct entry {
    shared_text text;
    message_kind kind;
  };

  bool notice_due() const { return dropped_ > notified_ && queue_.size() <= capacity_ / 2; }

  std::size_t capacity_;
  std::deque<entry> queue_;
  std::uint64_t dropped_ = 0;
  std::uint64_t notified_ = 0;  // dropped_ when the last notice was handed out
  std::uint64_t coalesced_ = 0;
};

/// The notice a client gets after drops: {"type":"dropped","schema":1,"dropped":N}.
std::string dropped_notice(std::uint64_t dropped);

}  // namespace tune::dashboard
