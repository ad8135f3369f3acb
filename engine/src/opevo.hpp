#pragma once
// OpEvo's child generation, shared by `opevo` and `opevo+knn`.

#include <utility>
#include <vector>

#include "strategies.hpp"
#include "tune/engine/strategy_base.hpp"

namespace tune::detail {

class opevo_strategy : public strategy_base {
 public:
  /// `defaults`: opevo_defaults(), or a table that holds it (opevo+knn's).
  opevo_strategy(std::string name, search_space_ptr space, const strategy_options& options,
                 const hyper_table& defaults);

 protected:
  void generate(std::size_t n, std::vector<configuration>& out) override;
  void on_result(const trial_result& result, double fit) override;

  /// True once λ results with positive fitness exist (before that: random).
  bool evolving() const { return ranked_.size() >= lambda_; }
  /// A child of the current top-λ (Eq. 2 recombination, Eq. 3 mutation),
  /// re-mutated until fresh; nullopt when the valid space is exhausted.
  std::optional<configuration> child();
  /// The λ best results with positive fitness so far, best first.
  const ranked_configurations& ranked() const { return ranked_; }
  /// Every parameter q-random-walked on its topology (Eq. 3).
  void mutate(configuration& config);

 private:
  std::size_t lambda_;
  std::vector<q_walk> walks_;     // per parameter, its q-random walk
  ranked_configurations ranked_;  // the λ best of positive fitness, best first
};

}  // namespace tune::detail
