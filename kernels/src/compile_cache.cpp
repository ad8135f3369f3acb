#include "tune/kernels/compile_cache.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
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

build_result compile_cache::fetch(const std::vector<std::string>& key_parts,
                                  const std::function<build_result(const fs::path& temporary)>& build_to) const {
  const fs::path artifact = artifact_path(key_parts);
  std::error_code ec;
  if (fs::exists(artifact, ec)) return {status::ok, artifact.string(), 0.0, "cached"};
  fs::create_directories(dir_, ec);
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
