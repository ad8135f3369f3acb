#pragma once
// A set of 64-bit keys in one flat table (open addressing, linear probing,
// at most half full, size a power of two): strategies ask whether a
// configuration's flat index was seen, and whether it is a measured
// dataset's member, millions of times a run; a probe here is a mix, a mask
// and usually one load, where a node-based set hashes a vector and follows
// two pointers.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tune {

class key_set {
 public:
  /// Adds the key; true when it was not in the set.
  bool insert(std::uint64_t key);

  bool contains(std::uint64_t key) const {
    if (key == vacant) return holds_vacant_;
    if (slots_.empty()) return false;
    for (std::size_t at = home(key);; at = (at + 1) & mask_) {
      if (slots_[at] == key) return true;
      if (slots_[at] == vacant) return false;
    }
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  // Marks an empty slot; the key with this value is held in a flag instead.
  static constexpr std::uint64_t vacant = ~std::uint64_t{0};

  // The slot a key's probe starts at: the high bits of a multiplicative mix,
  // so that keys differing in any bit spread over the table.
  std::size_t home(std::uint64_t key) const {
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ULL;
    return static_cast<std::size_t>(key >> shift_);
  }
  void grow();

  std::vector<std::uint64_t> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t size_ = 0;
  bool holds_vacant_ = false;
};

}  // namespace tune
