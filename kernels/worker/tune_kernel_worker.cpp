// tune-kernel-worker: measures one compiled CPU kernel in a process of its own,
// so that a kernel that crashes or hangs ends this process and not the engine.
//
//   tune-kernel-worker '<request JSON>'
//
// Request: {"mode": "measure" | "reference", "library": ".so", "entry": name,
//           "arguments": [{"type": "float*", "size": n, "output": bool, "value": x}],
//           "reference": file of expected outputs (written in reference mode),
//           "tolerance": t, "cores": [c, ...], "min_time_s": s,
//           "min_repeats": r, "max_repeats": r}
// Reply (last line of stdout): {"status": "ok" | "wrong_answer" | "runtime_error",
//           "time_ms": median, "repeats": n, "max_error": e, "message": text}
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tune/kernels/kernel_program.hpp"

namespace {

using entry_function = void (*)(void* const*);
using tune::argument_type;

struct argument_buffer {
  argument_type type;
  bool output = false;
  std::vector<std::uint8_t> bytes;
  std::size_t count = 0;
};

int reply(const nlohmann::json& answer) {
  std::printf("%s\n", answer.dump().c_str());
  std::fflush(stdout);
  return 0;
}

int fail(const std::string& message) { return reply({{"status", "runtime_error"}, {"message", message}}); }

// Inputs are the same in every process: a fixed hash of (argument, element).
double input_value(std::size_t argument, std::size_t index) {
  std::uint64_t z = (argument + 1) * 0x9e3779b97f4a7c15ULL + index * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
  z ^= z >> 29;
  return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
}

void fill(argument_buffer& buffer, std::size_t argument, bool poison) {
  auto count = buffer.count;
  switch (buffer.type) {
    case argument_type::f32_array: {
      auto* p = reinterpret_cast<float*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(input_value(argument, i));
      break;
    }
    case argument_type::f64_array: {
      auto* p = reinterpret_cast<double*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? std::numeric_limits<double>::quiet_NaN() : input_value(argument, i);
      break;
    }
    case argument_type::i32_array: {
      auto* p = reinterpret_cast<std::int32_t*>(buffer.bytes.data());
      for (std::size_t i = 0; i < count; ++i)
        p[i] = poison ? -1 : static_cast<std::int32_t>((input_value(argument, i) + 1.0) * 50.0);
      break;
    }
    default:
      break;
  }
}

double element(const argument_buffer& buffer, const std::uint8_t* bytes, std::size_t i) {
  switch (buffer.type) {
    case argument_type::f32_array:
      return reinterpret_cast<const float*>(bytes)[i];
    case argument_type::f64_array:
      return reinterpret_cast<const double*>(bytes)[i];
    default:
      return reinterpret_cast<const std::int32_t*>(bytes)[i];
  }
}

void pin(const nlohmann::json& cores) {
  if (!cores.is_array() || cores.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const auto& c : cores) CPU_SET(c.get<int>(), &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort: a missing core only costs accuracy
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tune-kernel-worker '<request JSON>'\n");
    return 2;
  }
  nlohmann::json request;
  try {
    request = nlohmann::json::parse(argv[1]);
  } catch (const std::exception& e) {
    return fail(std::string("bad request: ") + e.what());
  }
  pin(request.value("cores", nlohmann::json::array()));

  std::string mode = request.value("mode", "measure");
  std::string library = request.value("library", "");
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return fail(std::string("dlopen: ") + dlerror());
  std::string entry_name = request.value("entry", "tune_entry");
  auto entry = reinterpret_cast<entry_function>(dlsym(handle, entry_name.c_str()));
  if (!entry) return fail("entry '" + entry_name + "' not found in " + library);

  std::vector<argument_buffer> buffers;
  std::vector<void*> pointers;
  try {
    for (const auto& a : request.at("arguments")) {
      argument_buffer b;
      b.type = tune::argument_type_from_string(a.at("type").get<std::string>());
      b.output = a.value("output", false);
      b.count = tune::is_array(b.type) ? a.at("size").get<std::size_t>() : 1;
      b.bytes.assign(std::max<std::size_t>(b.count, 1) * tune::element_bytes(b.type) + 64, 0);
      double value = a.value("value", 0.0);
      switch (b.type) {
        case argument_type::i32: {
          auto v = static_cast<std::int32_t>(value);
          std::memcpy(b.bytes.data(), &v, sizeof v);
          break;
        }
        case argument_type::i64: {
          auto v = static_cast<std::int64_t>(value);
          std::memcpy(b.bytes.data(), &v, sizeof v);
          break;
        }
        case argument_type::f32: {
          auto v = static_cast<float>(value);
          std::memcpy(b.bytes.data(), &v, sizeof v);
          break;
        }
        case argument_type::f64:
          std::memcpy(b.bytes.data(), &value, sizeof value);
          break;
        default:
          fill(b, buffers.size(), b.output);
      }
      buffers.push_back(std::move(b));
    }
  } catch (const std::exception& e) {
    return fail(std::string("bad arguments: ") + e.what());
  }
  for (auto& b : buffers) pointers.push_back(b.bytes.data());

  std::string reference_path = request.value("reference", "");
  if (mode == "reference") {
    entry(pointers.data());
    std::ofstream out(reference_path + ".tmp", std::ios::binary);
    for (const auto& b : buffers)
      if (b.output) out.write(reinterpret_cast<const char*>(b.bytes.data()), b.count * tune::element_bytes(b.type));
    out.close();
    if (!out || std::rename((reference_path + ".tmp").c_str(), reference_path.c_str()) != 0)
      return fail("cannot write reference outputs to " + reference_path);
    return reply({{"status", "ok"}});
  }

  // The first run is checked (outputs start as NaN so unwritten elements
  // show) and serves as the warm-up.
  entry(pointers.data());
  std::ifstream expected(reference_path, std::ios::binary);
  if (!expected) return fail("cannot read reference outputs " + reference_path);
  double tolerance = request.value("tolerance", 1e-3);
  double max_error = 0.0;
  for (const auto& b : buffers) {
    if (!b.output) continue;
    std::vector<std::uint8_t> want(b.count * tune::element_bytes(b.type));
    if (!expected.read(reinterpret_cast<char*>(want.data()), static_cast<std::streamsize>(want.size())))
      return fail("reference outputs " + reference_path + " are shorter than the outputs");
    for (std::size_t i = 0; i < b.count; ++i) {
      double got = element(b, b.bytes.data(), i), ref = element(b, want.data(), i);
      double error = std::fabs(got - ref) / std::max(1.0, std::fabs(ref));
      if (!(error <= tolerance)) {
        char message[256];
        std::snprintf(message, sizeof message, "output element %zu is %.9g, expected %.9g (tolerance %g)", i, got, ref,
                      tolerance);
        return reply({{"status", "wrong_answer"}, {"message", message}, {"max_error", std::isnan(error) ? -1 : error}});
      }
      max_error = std::max(max_error, error);
    }
  }

  double min_time = request.value("min_time_s", 0.05);
  int min_repeats = request.value("min_repeats", 3), max_repeats = request.value("max_repeats", 1000);
  std::vector<double> times;
  double total = 0.0;
  while (static_cast<int>(times.size()) < max_repeats &&
         (static_cast<int>(times.size()) < min_repeats || total < min_time)) {
    auto start = std::chrono::steady_clock::now();
    entry(pointers.data());
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    times.push_back(seconds * 1e3);
    total += seconds;
  }
  std::sort(times.begin(), times.end());
  double median =
      times.size() % 2 ? times[times.size() / 2] : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
  return reply({{"status", "ok"}, {"time_ms", median}, {"repeats", times.size()}, {"max_error", max_error}});
}
