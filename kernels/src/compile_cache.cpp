#include "tune/kernels/compile_cache.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

namespace tune {

namespace fs = std::filesystem;

std::string cache_hash(const std::vector<std::string>& parts) {
  // Two FNV-1a streams with different offsets: 128 bits, enough that distinct
  // builds never share a file.
  std::uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;
  auto mix = [&](unsigned char c) {
    a = (a ^ c) * 0x100000001b3ULL;
    b = (b ^ c) * 0x100000001b3ULL;
    b ^= b >> 29;
  };
  for (const auto& part : parts) {
    for (unsigned char c : std::to_string(part.size())) mix(c);
    mix(':');
    for (unsigned char c : part) mix(c);
  }
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return text;
}

compile_cache::compile_cache(fs::path dir, std::string extension)
    : dir_(std::move(dir)), extension_(std::move(extension)) {}

fs::path compile_cache::artifact_path(const std::vector<std::string>& key_parts) const {
  return dir_ / (cache_hash(key_parts) + extension_);
}

fs::path compile_cache::temporary_name(const fs::path& base, const std::string& suffix) {
  return base.string() + ".tmp" + std::to_string(::getpid()) + "-" +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + suffix;
}

namespace {

/// The process number of a temporary's name ("<base>.tmp<pid>-<thread>..."),
/// 0 when the name is not one.
pid_t temporary_owner(const std::string& name) {
  const auto at = name.rfind(".tmp");
  if (at == std::string::npos) return 0;
  std::size_t i = at + 4;
  long long pid = 0;
  const std::size_t first = i;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && pid < 1000000000; ++i) pid = pid * 10 + (name[i] - '0');
  if (i == first || i >= name.size() || name[i] != '-' || pid <= 0) return 0;
  return static_cast<pid_t>(pid);
}

bool process_running(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

/// Sweeps `dir` once per process: the first fetch there.
void sweep_once(const fs::path& dir) {
  static std::mutex mutex;
  static std::set<fs::path> swept;
  {
    std::lock_guard lock(mutex);
    if (!swept.insert(dir).second) return;
  }
  compile_cache::remove_stale_temporaries(dir);
}

}  // namespace

std::size_t compile_cache::remove_stale_temporaries(const fs::path& dir, std::chrono::seconds min_age) {
  std::size_t removed = 0;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return 0;
  const auto now = fs::file_time_type::clock::now();
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    const auto name = it->path().filename().string();
    const pid_t owner = temporary_owner(name);
    if (owner == 0 || owner == ::getpid()) continue;
    std::error_code stat_ec;
    if (!it->is_regular_file(stat_ec)) continue;
    const auto written = it->last_write_time(stat_ec);
    if (stat_ec || now - written < min_age) continue;
    if (process_running(owner)) continue;
    if (fs::remove(it->path(), stat_ec)) ++removed;
  }
  return removed;
}

build_result compile_cache::fetch(const std::vector<std::string>& key_parts,
                                  const std::function<build_result(const fs::path& temporary)>& build_to) const {
  const fs::path artifact = artifact_path(key_parts);
  std::error_code ec;
  if (fs::exists(artifact, ec)) return {status::ok, artifact.string(), 0.0, "cached"};
  fs::create_directories(dir_, ec);
  sweep_once(dir_);
  const fs::path temporary = temporary_name(artifact);
  struct remove_on_exit {
    const fs::path& path;
    ~remove_on_exit() {
      std::error_code ignored;
      fs::remove(path, ignored);
    }
  } cleanup{temporary};
  build_result out = build_to(temporary);
  out.artifact = artifact.string();
  if (out.state != status::ok) return out;
  fs::rename(temporary, artifact, ec);
  if (ec) {
    out.state = status::compile_error;
    out.message = "cannot move " + temporary.string() + " into the compile cache: " + ec.message();
  }
  return out;
}

std::string compile_cache::write_file(const fs::path& file, std::string_view bytes) {
  const fs::path temporary = temporary_name(file);
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      out.close();
      std::error_code ignored;
      fs::remove(temporary, ignored);
      return "cannot write " + temporary.string();
    }
  }
  std::error_code ec;
  fs::rename(temporary, file, ec);
  if (!ec) return {};
  fs::remove(temporary, ec);
  return "cannot write " + file.string() + ": " + ec.message();
}

}  // namespace tune
