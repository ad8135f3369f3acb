#include "tune/kernels/device_lease.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace tune {

namespace {

bool valid_resource(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name.front() != '.' && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

/// The program's name and its first argument (the command), never the rest:
/// the lease file is readable by every user, and an argument may hold a
/// password (a database URI).
std::string own_command() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string program, command;
  std::getline(in, program, '\0');
  std::getline(in, command, '\0');
  if (auto slash = program.rfind('/'); slash != std::string::npos) program.erase(0, slash + 1);
  std::string out = program + (command.empty() || command.front() == '-' ? "" : " " + command);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
  return out.substr(0, 80);
}

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

lease_holder read_holder(int fd) {
  char text[256] = {};
  lease_holder h;
  auto n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return h;
  long pid = 0;
  double since = 0.0;
  int used = 0;
  if (std::sscanf(text, "%ld\t%lf\t%n", &pid, &since, &used) < 2 || pid <= 0) return h;
  // A line left by a holder that was killed, read while someone else (a
  // process that writes no line) holds the lock, names nobody.
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return h;
  h.pid = pid;
  h.since = since;
  h.command.assign(text + used);
  if (auto end = h.command.find('\n'); end != std::string::npos) h.command.resize(end);
  return h;
}

void write_holder(int fd) {
  char text[256];
  int n = std::snprintf(text, sizeof text, "%ld\t%.3f\t%s\n", static_cast<long>(::getpid()), now_s(),
                        own_command().c_str());
  if (n <= 0) return;
  // Best effort: a file only this process cannot write is still locked.
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, text, static_cast<std::size_t>(std::min(n, 255)), 0);
}

/// The lease folder, made (shared by every user, as /tmp is) when missing.
std::string ready_dir() {
  auto dir = lease_dir();
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT)
      throw std::runtime_error("cannot use the lease folder " + dir + ": " + std::strerror(errno) +
                               " (set TUNE_LEASE_DIR to a folder of your own)");
    if (::mkdir(dir.c_str(), 01777) == 0) {
      ::chmod(dir.c_str(), 01777);  // past the umask: every user leases here
    } else if (errno != EEXIST) {
      throw std::runtime_error("cannot make the lease folder " + dir + ": " + std::strerror(errno) +
                               " (set TUNE_LEASE_DIR to a folder you can write)");
    }
    if (::lstat(dir.c_str(), &st) != 0)
      throw std::runtime_error("cannot use the lease folder " + dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode))
    throw std::runtime_error("the lease folder " + dir +
                             " is not a folder (a symbolic link or a file is refused; set TUNE_LEASE_DIR)");
  return dir;
}

int open_lock(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_uid == ::geteuid()) ::fchmod(fd, 0666);  // others may lease it too
    return fd;
  }
  // Another user's file that this one may not write: it can still be locked.
  if (errno == EACCES) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot open the lease file " + path + ": " + std::strerror(errno) +
                             " (set TUNE_LEASE_DIR to a folder you can write)");
  return fd;
}

}  // namespace

std::string lease_holder::describe() const {
  if (pid <= 0) return "another process";
  std::string out = "pid " + std::to_string(pid);
  if (!command.empty()) out += " (" + command + ")";
  if (since > 0) {
    std::time_t t = static_cast<std::time_t>(since);
    std::tm local{};
    char when[32];
    if (::localtime_r(&t, &local) && std::strftime(when, sizeof when, "%H:%M:%S", &local) > 0)
      out += std::string(" since ") + when;
  }
  return out;
}

device_lease::device_lease(device_lease&& other) noexcept
    : resources_(std::move(other.resources_)), files_(std::move(other.files_)) {
  other.resources_.clear();
  other.files_.clear();
}

device_lease& device_lease::operator=(device_lease&& other) noexcept {
  if (this != &other) {
    release();
    resources_ = std::move(other.resources_);
    files_ = std::move(other.files_);
    other.resources_.clear();
    other.files_.clear();
  }
  return *this;
}

device_lease::~device_lease() { release(); }

void device_lease::merge(device_lease&& other) {
  resources_.insert(resources_.end(), other.resources_.begin(), other.resources_.end());
  files_.insert(files_.end(), other.files_.begin(), other.files_.end());
  other.resources_.clear();
  other.files_.clear();
}

void device_lease::release() {
  // The holder's line goes first (a holder killed leaves it: the next holder
  // writes its own, and a reader checks that its pid lives), then closing the
  // file drops its lock.
  for (int fd : files_) {
    (void)!::ftruncate(fd, 0);
    ::close(fd);
  }
  files_.clear();
  resources_.clear();
}

std::string lease_dir() {
  const char* dir = std::getenv("TUNE_LEASE_DIR");
  return dir && *dir ? dir : "/tmp/tune-engine-leases";
}

std::optional<device_lease> try_lease(const std::vector<std::string>& resources, std::string* taken_resource,
                                      lease_holder* holder) {
  auto sorted = resources;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (const auto& r : sorted)
    if (!valid_resource(r))
      throw std::invalid_argument("bad device resource name '" + r + "' (expected letters a-z, digits, '-' and '.')");
  device_lease lease;
  if (sorted.empty()) return lease;
  auto dir = ready_dir();
  for (const auto& r : sorted) {
    int fd = open_lock(dir + "/" + r + ".lock");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int error = errno;
      if (error != EWOULDBLOCK && error != EINTR) {
        ::close(fd);
        throw std::runtime_error("cannot lock the lease file " + dir + "/" + r + ".lock: " + std::strerror(error));
      }
      if (taken_resource) *taken_resource = r;
      if (holder) *holder = read_holder(fd);
      ::close(fd);
      return std::nullopt;  // what was leased is released with `lease`
    }
    write_holder(fd);
    lease.resources_.push_back(r);
    lease.files_.push_back(fd);
  }
  return lease;
}

std::vector<held_lease> held_leases() {
  std::vector<held_lease> out;
  auto dir = lease_dir();
  // The lock files by device and inode, as the lock table names them.
  struct lock_file {
    std::string resource, path;
    unsigned major_id, minor_id;
    unsigned long long inode;
  };
  std::vector<lock_file> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    auto name = entry.path().filename().string();
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".lock") != 0) continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    files.push_back({name.substr(0, name.size() - 5), entry.path().string(), major(st.st_dev), minor(st.st_dev),
                     static_cast<unsigned long long>(st.st_ino)});
  }
  if (files.empty()) return out;
  // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; "1: -> FLOCK …" is a waiter.
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    if (line.find("->") != std::string::npos || line.find("FLOCK") == std::string::npos) continue;
    char type[16] = {}, advisory[16] = {}, mode[16] = {};
    long pid = 0;
    unsigned major_id = 0, minor_id = 0;
    unsigned long long inode = 0;
    int n = std::sscanf(line.c_str(), "%*d: %15s %15s %15s %ld %x:%x:%llu", type, advisory, mode, &pid, &major_id,
                        &minor_id, &inode);
    if (n != 7) continue;
    for (const auto& f : files) {
      if (f.major_id != major_id || f.minor_id != minor_id || f.inode != inode) continue;
      held_lease h{f.resource, {}};
      if (int fd = ::open(f.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC); fd >= 0) {
        h.holder = read_holder(fd);
        ::close(fd);
      }
      if (h.holder.pid != pid) {
        h.holder = {};
        h.holder.pid = pid;
        std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
        std::getline(comm, h.holder.command);
      }
      out.push_back(std::move(h));
    }
  }
  std::sort(out.begin(), out.end(), [](const held_lease& a, const held_lease& b) { return a.resource < b.resource; });
  return out;
}

std::optional<device_lease> lease_devices(
    const std::vector<std::string>& resources,
    const std::function<void(const std::string& resource, const lease_holder& holder)>& on_wait,
    const std::function<bool()>& stop, double poll_s) {
  std::string said_resource;
  long said_pid = -1;
  for (;;) {
    std::string taken;
    lease_holder holder;
    if (auto lease = try_lease(resources, &taken, &holder)) return lease;
    if (on_wait && (taken != said_resource || holder.pid != said_pid)) {
      on_wait(taken, holder);
      said_resource = taken;
      said_pid = holder.pid;
    }
    if (stop && stop()) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(poll_s, 0.001)));
  }
}

}  // namespace tune
