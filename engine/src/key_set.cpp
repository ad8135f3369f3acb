#include "tune/engine/key_set.hpp"

namespace tune {

bool key_set::insert(std::uint64_t key) {
  if (key == vacant) {
    if (holds_vacant_) return false;
    holds_vacant_ = true;
    ++size_;
    return true;
  }
  if (2 * (size_ + 1) > slots_.size()) grow();
  for (std::size_t at = home(key);; at = (at + 1) & mask_) {
    if (slots_[at] == key) return false;
    if (slots_[at] == vacant) {
      slots_[at] = key;
      ++size_;
      return true;
    }
  }
}

void key_set::grow() {
  std::vector<std::uint64_t> old(slots_.empty() ? 16 : 2 * slots_.size(), vacant);
  old.swap(slots_);
  mask_ = slots_.size() - 1;
  shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(slots_.size()));
  for (auto key : old) {
    if (key == vacant) continue;
    std::size_t at = home(key);
    while (slots_[at] != vacant) at = (at + 1) & mask_;
    slots_[at] = key;
  }
}

}  // namespace tune
