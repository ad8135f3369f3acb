#pragma once
// The median of a stream of numbers, kept as they come: two heaps, the lower
// half's largest on top of one and the upper half's smallest on top of the
// other, their sizes equal or the lower one larger by one. Adding is
// O(log n), reading the median O(1); the compile pool keeps one per task for
// the typical build of a run (early_stop_policy::build_factor).

#include <cstddef>
#include <functional>
#include <queue>
#include <vector>

namespace tune::detail {

class running_median {
 public:
  void add(double x) {
    if (lower_.empty() || x <= lower_.top())
      lower_.push(x);
    else
      upper_.push(x);
    if (lower_.size() > upper_.size() + 1) {
      upper_.push(lower_.top());
      lower_.pop();
    } else if (upper_.size() > lower_.size()) {
      lower_.push(upper_.top());
      upper_.pop();
    }
  }

  std::size_t size() const { return lower_.size() + upper_.size(); }

  /// The median (the mean of the two middle values of an even count); 0 when
  /// nothing was added.
  double median() const {
    if (lower_.empty()) return 0.0;
    if (lower_.size() > upper_.size()) return lower_.top();
    return 0.5 * (lower_.top() + upper_.top());
  }

 private:
  std::priority_queue<double> lower_;
  std::priority_queue<double, std::vector<double>, std::greater<double>> upper_;
};

}  // namespace tune::detail
