#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../../kernels/worker/huge_pages.hpp"
#include "../../../kernels/worker/measure.hpp"
#include "../../skip.hpp"

using tune::worker::argument_storage;
using tune::worker::huge_page_bytes;
using tune::worker::huge_page_storage;
using tune::worker::whole_huge_pages;

namespace {

// The system's transparent huge page mode: "always", "madvise", "never", or
// empty when it has none.
std::string huge_page_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  auto open = line.find('['), close = line.find(']');
  return open != std::string::npos && close > open ? line.substr(open + 1, close - open - 1) : std::string();
}

// Whether the mapping that holds `address` may get huge pages, from
// /proc/self/smaps (THPeligible); -1 when the mapping or the field is not
// there.
int huge_page_eligible(std::uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= address && address < to;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}

}  // namespace

TEST_CASE("whole_huge_pages finds the 2 MiB pages inside a buffer") {
  const std::uintptr_t at = 64 * huge_page_bytes;
  auto inside = whole_huge_pages(reinterpret_cast<void*>(at + 64), 5 * huge_page_bytes);
  CHECK(inside.first == at + huge_page_bytes);
  CHECK(inside.last == at + 5 * huge_page_bytes);
  auto aligned = whole_huge_pages(reinterpret_cast<void*>(at), 2 * huge_page_bytes);
  CHECK(aligned.first == at);
  CHECK(aligned.last == at + 2 * huge_page_bytes);
  // Less than a whole huge page, even one that crosses a boundary: none.
  auto small = whole_huge_pages(reinterpret_cast<void*>(at + huge_page_bytes / 2), huge_page_bytes);
  CHECK(small.first == small.last);
  auto tiny = whole_huge_pages(reinterpret_cast<void*>(at + 16), 100);
  CHECK(tiny.first == tiny.last);
}

TEST_CASE("huge_page_storage makes an output's storage eligible for huge pages and leaves an input's alone") {
  auto mode = huge_page_mode();
  if (mode != "madvise") SKIP_TEST("transparent huge pages are '" << mode << "' here, not 'madvise'");
  int probe = 0;
  if (huge_page_eligible(reinterpret_cast<std::uintptr_t>(&probe)) < 0)
    SKIP_TEST("/proc/self/smaps says nothing of huge pages (no THPeligible) here");
  // Made as make_buffers makes an output and an input.
  const std::size_t size = 12 * huge_page_bytes + 64;
  auto output = huge_page_storage<argument_storage>(size);
  argument_storage input(size, 0);
  REQUIRE(output.size() == size);
  CHECK(output[0] == 0);
  CHECK(output[size - 1] == 0);
  auto range = whole_huge_pages(output.data(), size);
  REQUIRE(range.last - range.first >= 10 * huge_page_bytes);
  CHECK(huge_page_eligible(range.first) == 1);
  CHECK(huge_page_eligible(range.last - 1) == 1);
  auto untouched = whole_huge_pages(input.data(), size);
  CHECK(huge_page_eligible(untouched.first) == 0);
}

TEST_CASE("huge_page_storage holds the count of elements asked for, each the value given") {
  auto empty = huge_page_storage<std::vector<float>>(0);
  CHECK(empty.empty());
  auto halves = huge_page_storage<std::vector<float>>(3 * huge_page_bytes / sizeof(float) + 5, 0.5f);
  REQUIRE(halves.size() == 3 * huge_page_bytes / sizeof(float) + 5);
  std::size_t other = 0;
  for (float x : halves) other += x != 0.5f;
  CHECK(other == 0);
}

TEST_CASE("touch_pages reads every page a buffer touches, the partial ones at its ends included") {
  using tune::worker::touch_pages;
  constexpr std::uintptr_t page = 4096;
  std::vector<unsigned char> storage(8 * page);
  const auto base = (reinterpret_cast<std::uintptr_t>(storage.data()) + page - 1) & ~(page - 1);
  const auto* aligned = reinterpret_cast<const unsigned char*>(base);
  CHECK(touch_pages(aligned, 0, page) == 0);
  CHECK(touch_pages(aligned, 1, page) == 1);
  CHECK(touch_pages(aligned, page, page) == 1);
  CHECK(touch_pages(aligned, page + 1, page) == 2);
  CHECK(touch_pages(aligned, 3 * page, page) == 3);
  // Starting inside a page: that page, then the next whole ones, then the last partial one.
  CHECK(touch_pages(aligned + 100, page, page) == 2);
  CHECK(touch_pages(aligned + page - 1, 2, page) == 2);
  CHECK(touch_pages(aligned + 100, 2 * page - 100, page) == 2);
  CHECK(touch_pages(aligned + 100, 2 * page - 99, page) == 3);
}

TEST_CASE("touch_input_pages reads the input arrays' pages, not the outputs' or the scalars'") {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  using tune::argument_type;
  using tune::worker::argument_buffer;
  auto buffer = [](argument_type type, std::size_t bytes, bool output) {
    argument_buffer b;
    b.type = type;
    b.output = output;
    b.bytes.assign(bytes, 1);
    b.count = bytes / 4;
    return b;
  };
  std::vector<argument_buffer> buffers;
  buffers.push_back(buffer(argument_type::f32_array, 40000, false));
  buffers.push_back(buffer(argument_type::f32_array, 80000, true));
  buffers.push_back(buffer(argument_type::i32, 4, false));
  buffers.push_back(buffer(argument_type::f64_array, 24000, false));
  REQUIRE(buffers.size() == 4);
  std::size_t expected = 0;
  for (std::size_t i : {0u, 3u}) {
    const auto begin = reinterpret_cast<std::uintptr_t>(buffers[i].bytes.data());
    const auto end = begin + buffers[i].bytes.size();
    expected += (end - 1) / page - begin / page + 1;
  }
  const auto before = buffers[0].bytes;
  CHECK(tune::worker::touch_input_pages(buffers) == expected);
  CHECK(buffers[0].bytes == before);
}
