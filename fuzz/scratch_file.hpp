#pragma once
// A file for one fuzzer input: readers that take a path (datasets, results
// databases) read the input from it. One name per process and suffix, in
// $TMPDIR (default /tmp); removed, with SQLite's -wal, -shm and -journal,
// before each write and at the end.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tune::fuzz {

class scratch_file {
 public:
  explicit scratch_file(const std::string& suffix) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tune_fuzz_" + std::to_string(::getpid()) + suffix;
  }
  ~scratch_file() { remove(); }
  scratch_file(const scratch_file&) = delete;
  scratch_file& operator=(const scratch_file&) = delete;

  /// Replaces the file's contents with the input; returns its path.
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    remove();
    std::ofstream out(path_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path_;
  }

  void remove() const {
    std::error_code ignored;
    for (const char* extra : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + extra, ignored);
  }

 private:
  std::string path_;
};

}  // namespace tune::fuzz
