#pragma once
// Leases of measuring devices on one machine: a device (a CPU core, a GPU) is
// measured on by one process at a time. Two tuning runs on the same cores time
// each other's kernels as much as their own (two runs of 60 MatMul trials
// started together recorded 45.5 and 45.9 ms per trial where one alone
// recorded 23.1), and a build running tuning steps in parallel does exactly
// that.
//
// A lease is an advisory lock (flock) on one file per resource in the lease
// folder ($TUNE_LEASE_DIR, else /tmp/tune-engine-leases, shared by every user
// of the machine): the kernel drops it when its holder exits, however it
// exits, so a killed run leaves nothing behind. The holder writes who it is
// (pid, command, since when) into the file, so that a process that waits for
// it can say so. Resources are named by the backends
// (backend::device_resources): "cpu-core-3", "cuda-0", "hip-1".
//
//   lease_devices(resources)   all of them, or none: each resource in a fixed
//                              (sorted) order, so two processes waiting for
//                              overlapping sets cannot hold each other up
//   try_lease(resources)       the same without waiting: the holder of the
//                              first one taken when it fails

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tune {

/// Who holds a lease, as its holder wrote it; pid 0 when it could not be read.
struct lease_holder {
  long pid = 0;
  std::string command;  ///< the holder's command line, shortened
  double since = 0.0;   ///< seconds since the epoch when it took the lease

  /// "pid 1234 (tune-engine tune --task matmul:…) since 16:30:02".
  std::string describe() const;
};

/// Held leases, released when destroyed (or when the process ends).
class device_lease {
 public:
  device_lease() = default;
  device_lease(device_lease&& other) noexcept;
  device_lease& operator=(device_lease&& other) noexcept;
  device_lease(const device_lease&) = delete;
  device_lease& operator=(const device_lease&) = delete;
  ~device_lease();

  /// The resources held.
  const std::vector<std::string>& resources() const { return resources_; }
  bool empty() const { return resources_.empty(); }
  /// Adds what `other` holds to this lease.
  void merge(device_lease&& other);
  void release();

 private:
  friend std::optional<device_lease> try_lease(const std::vector<std::string>&, std::string*, lease_holder*);
  std::vector<std::string> resources_;
  std::vector<int> files_;
};

/// The lease folder: $TUNE_LEASE_DIR, else /tmp/tune-engine-leases.
std::string lease_dir();

/// Leases every resource now, or none: nullopt when one is held by another
/// lease (in this process or another), with its name and holder. Throws
/// std::invalid_argument for a resource name other than [a-z0-9.-]+ and
/// std::runtime_error when the lease folder cannot be used (naming it).
std::optional<device_lease> try_lease(const std::vector<std::string>& resources, std::string* taken_resource = nullptr,
                                      lease_holder* holder = nullptr);

/// A lease held now, and by whom.
struct held_lease {
  std::string resource;
  lease_holder holder;
};

/// The leases held now in the lease folder, by resource name, as the
/// kernel's lock table (/proc/locks) shows them: read without taking any lock,
/// so looking never gets in a run's way. The holder is the one its line
/// names, else the lock's process (its name from /proc). Empty when there is
/// no lease folder or no lock table.
std::vector<held_lease> held_leases();

/// Leases every resource, waiting for those another process holds:
/// `on_wait(resource, holder)` is called when the wait for a resource begins
/// and whenever its holder changes; `stop()` true gives up (nullopt). Polls
/// every `poll_s` seconds.
std::optional<device_lease> lease_devices(
    const std::vector<std::string>& resources,
    const std::function<void(const std::string& resource, const lease_holder& holder)>& on_wait = {},
    const std::function<bool()>& stop = {}, double poll_s = 0.05);

}  // namespace tune
