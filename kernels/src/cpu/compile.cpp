// One build of a CPU shared object (compile.hpp).
#include "compile.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "elf_symbols.hpp"
#include "tune/kernels/subprocess.hpp"

namespace tune {

namespace {

// How a build links, from the cheapest: nothing (the engine checks that the C
// library defines every symbol left), the C library and libgcc's helpers
// (-z defs), the compiler's own link.
enum class link_way { none = 0, c_library = 1, compiler = 2 };

// Compiler and flags (joined) whose sources needed more than a cheaper way:
// the way that worked.
struct known_links {
  std::mutex mutex;
  std::map<std::string, link_way> ways;
};

known_links& links_needed() {
  static known_links known;
  return known;
}

std::string link_key(const std::string& compiler, const std::vector<std::string>& flags) {
  std::string key = compiler;
  for (const auto& f : flags) key += '\n' + f;
  return key;
}

std::vector<std::string> link_argv(link_way way, const std::string& compiler, const std::vector<std::string>& flags,
                                   const std::string& source, const std::string& output) {
  std::vector<std::string> argv{compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (way == link_way::none) argv.push_back("-nostdlib");
  if (way == link_way::c_library) {
    auto link = self_contained_link_flags();
    argv.insert(argv.end(), link.begin(), link.end());
  }
  argv.insert(argv.end(), {"-o", output, source});
  if (way == link_way::c_library) {
    auto libraries = self_contained_link_libraries();
    argv.insert(argv.end(), libraries.begin(), libraries.end());
  }
  return argv;
}

build_result outcome_of(const process_result& result, double timeout_s) {
  build_result out{status::compile_error, {}, result.seconds, {}};
  if (!result.started) {
    out.message = result.error;
  } else if (result.timed_out) {
    out.state = status::build_timeout;
    out.message = "compiler killed after " + std::to_string(timeout_s) + " s";
  } else if (!result.ok()) {
    out.message = result.output.empty() ? "compiler failed" : result.output;
  } else {
    out.state = status::ok;
  }
  return out;
}

}  // namespace

std::vector<std::string> self_contained_link_flags() { return {"-nostdlib", "-Wl,-z,defs"}; }

std::vector<std::string> self_contained_link_libraries() { return {"-lc", "-lgcc"}; }

bool link_failed(const std::string& output) {
  // GCC's driver, clang's, and the linkers' own words for a missing symbol.
  for (const char* sign : {"ld returned", "linker command failed", "undefined reference", "undefined symbol"})
    if (output.find(sign) != std::string::npos) return true;
  return false;
}

build_result build_shared_object(const std::string& compiler, const std::vector<std::string>& flags,
                                 const std::string& source, const std::string& output, double timeout_s,
                                 const std::vector<std::string>& environment) {
  const std::string key = link_key(compiler, flags);
  auto& known = links_needed();
  link_way first = link_way::none;
  {
    std::lock_guard lock(known.mutex);
    if (auto it = known.ways.find(key); it != known.ways.end()) first = it->second;
  }
  double spent = 0.0;
  for (auto way = first;; way = static_cast<link_way>(static_cast<int>(way) + 1)) {
    const double left = timeout_s - spent;
    if (left <= 0)
      return {status::build_timeout, {}, spent, "compiler killed after " + std::to_string(timeout_s) + " s"};
    auto result = run_process(link_argv(way, compiler, flags, source, output), left, 64 * 1024, {}, environment);
    spent += result.seconds;
    auto out = outcome_of(result, timeout_s);
    out.compile_s = spent;
    bool cheaper_failed = way != link_way::compiler && out.state != status::ok && result.started && !result.timed_out &&
                          link_failed(result.output);
    if (out.state == status::ok && way == link_way::none) {
      // Linked against nothing: every symbol it leaves must be the C
      // library's, or it takes the next way.
      std::string error;
      auto beyond = needed_beyond_c_library(output, error);
      cheaper_failed = !beyond || !beyond->empty();
    }
    if (cheaper_failed) continue;
    if (out.state == status::ok && way != first) {
      std::lock_guard lock(known.mutex);
      auto& recorded = known.ways[key];
      recorded = std::max(recorded, way);
    }
    return out;
  }
}

}  // namespace tune
