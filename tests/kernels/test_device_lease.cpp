// Device leases: held until released, all or none, said who holds them, gone
// with their holder (a process killed with SIGKILL), waited for; bad names and
// an unusable lease folder refused plainly. Each test uses a lease folder of
// its own (TUNE_LEASE_DIR).
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kernel_fixtures.hpp"
#include "tune/kernels/device_lease.hpp"

extern char** environ;

namespace {

/// TUNE_LEASE_DIR set to a folder of the test's own while it lives (the
/// folder itself not made: leasing makes it).
class lease_folder {
 public:
  explicit lease_folder(const std::string& name) : scratch_(name), dir_((scratch_.path() / "leases").string()) {
    const char* old = std::getenv("TUNE_LEASE_DIR");
    if (old) old_ = old;
    ::setenv("TUNE_LEASE_DIR", dir_.c_str(), 1);
  }
  ~lease_folder() {
    if (old_.empty())
      ::unsetenv("TUNE_LEASE_DIR");
    else
      ::setenv("TUNE_LEASE_DIR", old_.c_str(), 1);
  }
  const std::string& dir() const { return dir_; }
  const tune::test::kernel_scratch& scratch() const { return scratch_; }

 private:
  tune::test::kernel_scratch scratch_;
  std::string dir_, old_;
};

/// A process holding `resource`'s lock file with util-linux flock(1), as any
/// other holder would (it writes no holder line), in a process group of its
/// own with the command it waits for (which does not hold the lock:
/// --close). Its pid, which is the group's.
pid_t hold_with_flock(const std::string& dir, const std::string& resource) {
  std::filesystem::create_directories(dir);
  std::string file = dir + "/" + resource + ".lock";
  std::vector<std::string> args = {"flock", "--exclusive", "--close", file, "sleep", "600"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attributes;
  ::posix_spawnattr_init(&attributes);
  ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  ::posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, "flock", nullptr, &attributes, argv.data(), environ);
  ::posix_spawnattr_destroy(&attributes);
  return rc == 0 ? pid : -1;
}

}  // namespace

TEST_CASE("a device lease is held until released, and a second one is told who holds it", "[kernels][lease]") {
  lease_folder folder("lease-held");
  auto first = tune::try_lease({"cpu-core-1", "cpu-core-0"});
  REQUIRE(first);
  CHECK(first->resources() == std::vector<std::string>{"cpu-core-0", "cpu-core-1"});  // sorted
  std::string taken;
  tune::lease_holder holder;
  CHECK_FALSE(tune::try_lease({"cpu-core-1"}, &taken, &holder));
  CHECK(taken == "cpu-core-1");
  CHECK(holder.pid == ::getpid());
  CHECK(holder.command.find("test_kernels") == 0);
  CHECK(holder.since > 0);
  CHECK(holder.describe().find("pid " + std::to_string(::getpid()) + " (test_kernels") == 0);
  CHECK(holder.describe().find(" since ") != std::string::npos);
  // The kernel's lock table shows them, with their holder.
  auto held = tune::held_leases();
  REQUIRE(held.size() == 2);
  CHECK(held[0].resource == "cpu-core-0");
  CHECK(held[1].resource == "cpu-core-1");
  CHECK(held[1].holder.pid == ::getpid());
  CHECK(held[1].holder.command.find("test_kernels") == 0);
  // Other resources are free meanwhile.
  CHECK(tune::try_lease({"cpu-core-2", "cuda-0"}));
  first->release();
  CHECK(first->empty());
  CHECK(tune::held_leases().empty());
  CHECK(tune::try_lease({"cpu-core-1"}));
  // The folder is shared by every user of the machine.
  struct stat st {};
  REQUIRE(::stat(folder.dir().c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 01777);
}

TEST_CASE("a device lease is all or none", "[kernels][lease]") {
  lease_folder folder("lease-all");
  auto held = tune::try_lease({"cpu-core-1"});
  REQUIRE(held);
  std::string taken;
  CHECK_FALSE(tune::try_lease({"cpu-core-0", "cpu-core-1", "cpu-core-2"}, &taken));
  CHECK(taken == "cpu-core-1");
  // What it had taken before it met core 1 was given back.
  auto zero = tune::try_lease({"cpu-core-0"});
  REQUIRE(zero);
  tune::device_lease merged;
  merged.merge(std::move(*zero));
  merged.merge(std::move(*held));
  CHECK(merged.resources().size() == 2);
  merged.release();
  CHECK(tune::try_lease({"cpu-core-0", "cpu-core-1", "cpu-core-2"}));
}

TEST_CASE("a device lease ends with its holder, however it ends, and a waiter then takes it", "[kernels][lease]") {
  lease_folder folder("lease-killed");
  pid_t holder_pid = hold_with_flock(folder.dir(), "cuda-0");
  REQUIRE(holder_pid > 0);
  struct group_end {
    pid_t group;
    ~group_end() {
      ::kill(-group, SIGKILL);  // whatever is left of it, however the test ends
      ::waitpid(group, nullptr, WNOHANG);
    }
  } end_holder{holder_pid};
  // Until flock(1) has the lock, a lease of it succeeds (and is given back).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (tune::try_lease({"cuda-0"}) && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  REQUIRE_FALSE(tune::try_lease({"cuda-0"}));
  // A holder that writes no line is named by the lock table: its pid and name.
  auto held = tune::held_leases();
  REQUIRE(held.size() == 1);
  CHECK(held[0].resource == "cuda-0");
  CHECK(held[0].holder.pid == holder_pid);
  CHECK(held[0].holder.command == "flock");
  // The wait sees the lease taken (once flock(1) has it), kills its holder
  // with SIGKILL, and takes it once the kernel has dropped the lock.
  std::vector<std::string> waited_for;
  bool killed = false;
  auto lease = tune::lease_devices(
      {"cuda-0"},
      [&](const std::string& resource, const tune::lease_holder& holder) {
        waited_for.push_back(resource);
        CHECK(holder.pid == 0);  // flock(1) writes no holder line
        CHECK(holder.describe() == "another process");
        if (!killed) killed = ::kill(holder_pid, SIGKILL) == 0;  // flock(1) alone: the lock goes with it
      },
      [] { return false; }, 0.01);
  ::waitpid(holder_pid, nullptr, 0);
  REQUIRE(lease);
  CHECK(killed);
  CHECK(waited_for == std::vector<std::string>{"cuda-0"});
  CHECK(lease->resources() == std::vector<std::string>{"cuda-0"});
}

TEST_CASE("a wait for a device lease gives up when told to stop", "[kernels][lease]") {
  lease_folder folder("lease-stop");
  auto held = tune::try_lease({"hip-0"});
  REQUIRE(held);
  int calls = 0;
  auto lease = tune::lease_devices(
      {"hip-0"}, {}, [&] { return ++calls == 3; }, 0.001);
  CHECK_FALSE(lease);
  CHECK(calls == 3);
}

TEST_CASE("device leases refuse bad resource names and an unusable folder", "[kernels][lease]") {
  lease_folder folder("lease-bad");
  for (const char* bad : {"", "../etc/passwd", "cpu core 1", "CPU-0", ".hidden"}) {
    INFO(bad);
    CHECK_THROWS_AS(tune::try_lease({bad}), std::invalid_argument);
  }
  CHECK(tune::try_lease({}));  // nothing to lease: an empty lease
  auto file = folder.scratch().write("not-a-folder", "x");
  ::setenv("TUNE_LEASE_DIR", file.c_str(), 1);
  try {
    (void)tune::try_lease({"cpu-core-0"});
    FAIL("a file as the lease folder was accepted");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(file) != std::string::npos);
    CHECK(std::string(e.what()).find("TUNE_LEASE_DIR") != std::string::npos);
  }
  auto link = (folder.scratch().path() / "link").string();
  std::filesystem::create_directories(folder.scratch().path() / "real");
  std::filesystem::create_directory_symlink(folder.scratch().path() / "real", link);
  ::setenv("TUNE_LEASE_DIR", link.c_str(), 1);
  CHECK_THROWS_AS(tune::try_lease({"cpu-core-0"}), std::runtime_error);
}
