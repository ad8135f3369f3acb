#pragma once
// A trial of program-edit evolution for the facade's tests: ok, {time, error},
// `edits` empty edits (only their number matters to fronts and plots).
#include "tune/engine/program_edit.hpp"
#include "tune/tune.hpp"

namespace tune::test {
inline trial_info evolved_variant(std::uint64_t id, double time_ms, double error, std::size_t edits) {
  trial_info t;
  t.seq = id;
  t.state = status::ok;
  t.time_ms = time_ms;
  t.objectives = {time_ms, error};
  t.config = encode(edit_list(edits, program_edit{}));
  return t;
}
}  // namespace tune::test
