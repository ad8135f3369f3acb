// Fuzzes the event stream's validator, which every subscriber runs on each
// message from the network: it must accept a valid event or say why not,
// never throw, crash or hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tune/storage/event_stream.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string problem;
  auto event = tune::storage::parse_event(std::string_view(reinterpret_cast<const char*>(data), size), problem);
  if (event) {
    // An accepted event is valid again once written out.
    std::string again;
    if (!tune::storage::parse_event(event->dump(), again)) std::abort();
  } else if (problem.empty()) {
    std::abort();  // a refusal always says why
  }
  return 0;
}
