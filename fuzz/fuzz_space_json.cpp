// Fuzzes the search-space readers (NNI spaces, T1 specs, the tune_params of
// Kernel Tuner caches) and what is asked of a space once it is read. Bad input
// must end in std::exception (a clear message), never a crash, hang or leak.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tune/engine/readers.hpp"

namespace {
void exercise(const tune::search_space& space) {
  (void)space.cartesian_size_text();
  (void)space.count_valid(10000);
  tune::rng_type rng(1);
  // draw_valid enumerates up to 20,000,000 configurations (once, cached)
  // when rejection fails: by design, but too slow for a fuzzer's input.
  if (auto n = space.cartesian_size(); n && *n <= 100000)
    if (auto c = space.draw_valid(rng, 100)) (void)space.to_json(*c);
  (void)space.estimate_valid(50, rng);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    exercise(tune::nni_space_from_json(doc, "fuzz"));
  } catch (const std::exception&) {
  }
  try {
    exercise(tune::t1_space_from_json(doc, "fuzz"));
  } catch (const std::exception&) {
  }
  try {
    exercise(tune::kernel_tuner_space_from_json(doc, "fuzz"));
  } catch (const std::exception&) {
  }
  return 0;
}
