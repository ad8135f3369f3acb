// One build of a CPU shared object (compile.hpp).
#include "compile.hpp"

#include <mutex>
#include <set>

#include "tune/kernels/subprocess.hpp"

namespace tune {

namespace {

// Compiler and flags (joined) whose sources needed the compiler's own link.
struct ordinary_links {
  std::mutex mutex;
  std::set<std::string> keys;
};

ordinary_links& needing_ordinary_link() {
  static ordinary_links known;
  return known;
}

std::string link_key(const std::string& compiler, const std::vector<std::string>& flags) {
  std::string key = compiler;
  for (const auto& f : flags) key += '\n' + f;
  return key;
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
                                 const std::string& source, const std::string& output, double timeout_s) {
  const std::string key = link_key(compiler, flags);
  auto& ordinary = needing_ordinary_link();
  bool self_contained = false;
  {
    std::lock_guard lock(ordinary.mutex);
    self_contained = ordinary.keys.count(key) == 0;
  }
  double spent = 0.0;
  if (self_contained) {
    std::vector<std::string> argv{compiler};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto link = self_contained_link_flags();
    argv.insert(argv.end(), link.begin(), link.end());
    argv.insert(argv.end(), {"-o", output, source});
    auto libraries = self_contained_link_libraries();
    argv.insert(argv.end(), libraries.begin(), libraries.end());
    auto result = run_process(argv, timeout_s, 64 * 1024);
    auto out = outcome_of(result, timeout_s);
    if (out.state == status::ok || !result.started || result.timed_out || !link_failed(result.output)) return out;
    spent = result.seconds;
  }
  std::vector<std::string> argv{compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-o", output, source});
  const double left = timeout_s - spent;
  build_result out;
  if (left > 0) {
    out = outcome_of(run_process(argv, left, 64 * 1024), timeout_s);
  } else {
    out = {status::build_timeout, {}, 0.0, "compiler killed after " + std::to_string(timeout_s) + " s"};
  }
  out.compile_s += spent;
  if (self_contained && out.state == status::ok) {
    std::lock_guard lock(ordinary.mutex);
    ordinary.keys.insert(key);
  }
  return out;
}

}  // namespace tune
