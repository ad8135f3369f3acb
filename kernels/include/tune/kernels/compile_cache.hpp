#pragma once
// The compile cache the CPU, CUDA and HIP backends share: one folder per
// backend of artifacts (shared objects, cubins, code objects, reference
// outputs) named by a hash of everything that changes them.
//
//   fetch(key parts) ──exists──> <dir>/<hash><ext>                  "cached"
//                    ──missing─> build_to(<dir>/<hash><ext>.tmp<pid>-<thread>)
//                                    ──ok──> rename into place      (atomic)
//                                    ──else─> temporary removed
//
// Several threads and processes (two runs of one task, the compile pool's
// workers) may build the same key at once: each writes a temporary file of
// its own and renames it, so a reader sees no file or a whole one, never a
// torn one, and the last rename wins with identical content.
//
// A process killed mid-build (SIGKILL, a power cut) leaves its temporary
// behind; the first fetch of a process in a folder removes the temporaries
// there that are more than an hour old and whose process is not running
// (remove_stale_temporaries).

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/kernels/backend.hpp"

namespace tune {

/// Hex digest (128 bits) of the parts, for cache keys; the parts' boundaries
/// count ({"ab", "c"} and {"a", "bc"} differ).
std::string cache_hash(const std::vector<std::string>& parts);

class compile_cache {
 public:
  /// Artifacts `<dir>/<hash><extension>`; the folder is created on the first
  /// build.
  compile_cache(std::filesystem::path dir, std::string extension);

  const std::filesystem::path& dir() const { return dir_; }

  /// Where the artifact of these key parts is (or will be).
  std::filesystem::path artifact_path(const std::vector<std::string>& key_parts) const;

  /// The artifact of `key_parts`: {ok, path, 0 s, "cached"} when it exists;
  /// else `build_to(temporary)` writes it to a temporary name no other thread
  /// or process uses and returns the outcome (state, compile_s, message), and
  /// an ok outcome is renamed into place. The temporary never outlives the
  /// call, also when `build_to` fails or throws. The result's artifact is the
  /// final path.
  build_result fetch(const std::vector<std::string>& key_parts,
                     const std::function<build_result(const std::filesystem::path& temporary)>& build_to) const;

  /// `base` + ".tmp<pid>-<thread>" + `suffix`: a name of this thread's own.
  static std::filesystem::path temporary_name(const std::filesystem::path& base, const std::string& suffix = {});

  /// Removes the temporaries in `dir` (names with ".tmp<pid>-", as
  /// temporary_name gives, whatever follows) that were last written more
  /// than `min_age` ago and whose process is not running on this machine:
  /// what a killed build left. A live build's temporary is never that old
  /// (builds have time limits of seconds to minutes), and the age also spares
  /// another machine's builds in a shared folder, whose process numbers mean
  /// nothing here. Returns how many were removed; a folder that does not
  /// exist or cannot be read removes none.
  static std::size_t remove_stale_temporaries(const std::filesystem::path& dir,
                                              std::chrono::seconds min_age = std::chrono::hours(1));

  /// Writes `bytes` to `file` through a temporary name and a rename. Returns
  /// the problem, empty on success.
  static std::string write_file(const std::filesystem::path& file, std::string_view bytes);

 private:
  std::filesystem::path dir_;
  std::string extension_;
};

}  // namespace tune
