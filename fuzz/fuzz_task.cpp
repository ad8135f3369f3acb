// Fuzzes task strings (matmul:512x1024x1024, bmm:…:nt, conv2d:…:s4:p0): a
// string either fails with std::invalid_argument or gives a task whose
// canonical string reads back as the same task.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "tune/kernels/task.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tune::task_spec task;
  try {
    task = tune::parse_task(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::invalid_argument&) {
    return 0;
  }
  (void)task.flops();
  auto text = task.to_string();
  // A task that was read must print as a string that reads back (no
  // exception may leave here: libFuzzer reports it as a crash).
  if (tune::parse_task(text).to_string() != text) std::abort();
  return 0;
}
