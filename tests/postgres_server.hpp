#pragma once
// A throw-away PostgreSQL server for the tests of the PostgreSQL results
// store: initdb into a temporary folder, started on a free port of 127.0.0.1
// (trust authentication, no fsync), one per test process, stopped and removed
// when the process ends. As root the server runs as the system's postgres
// user (PostgreSQL refuses root). Where it cannot run (no PostgreSQL server
// installed, a build without libpq) why_not() says so and the test skips.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tune/kernels/subprocess.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::test {

/// Runs argv (no shell, tune::run_process), its stdout and stderr into
/// `output`; the exit status (-1 when it did not end normally within 60 s).
inline int run_argv(const std::vector<std::string>& argv, std::string* output = nullptr) {
  auto result = run_process(argv, 60.0);
  if (output) *output = result.started ? result.output : result.error;
  return result.started && !result.timed_out && result.signal == 0 ? result.exit_code : -1;
}

class postgres_server {
 public:
  /// The process's server, started at the first call.
  static postgres_server& shared() {
    static postgres_server server;
    return server;
  }

  /// Why no server runs here; empty when one does.
  const std::string& why_not() const { return why_not_; }

  /// A new empty database on the server: its URI (user postgres, no password).
  std::string new_database() {
    std::string name = std::to_string(::getpid());
    name.insert(name.begin(), 't');
    name += '_';
    name += std::to_string(++databases_);
    std::string output;
    if (run_argv({bin_ + "/createdb", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U", "postgres", name},
                 &output) != 0)
      throw std::runtime_error("createdb " + name + " failed: " + output);
    return uri(name);
  }
  std::string uri(const std::string& database) const {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
  }
  int port() const { return port_; }
  /// Runs SQL on a database through psql; its output.
  std::string psql(const std::string& database, const std::string& sql) {
    std::string output;
    if (run_argv({bin_ + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
                  std::to_string(port_), "-U", "postgres", "-d", database, "-c", sql},
                 &output) != 0)
      throw std::runtime_error("psql failed: " + output);
    return output;
  }

  ~postgres_server() {
    if (started_) as_server_user({bin_ + "/pg_ctl", "-D", data_, "-m", "immediate", "-w", "stop"});
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

 private:
  postgres_server() {
    if (!storage::postgres_available()) {
      why_not_ = "this build has no PostgreSQL support (libpq-dev was not found)";
      return;
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
      if (std::filesystem::exists(entry.path() / "bin" / "initdb"))
        bin_ = std::max(bin_, (entry.path() / "bin").string());
    if (bin_.empty()) {
      why_not_ = "no PostgreSQL server installed (/usr/lib/postgresql/*/bin/initdb; Debian: postgresql)";
      return;
    }
    root_ = ::geteuid() == 0;
    passwd* pg = getpwnam("postgres");
    if (root_ && !pg) {
      why_not_ = "running as root and there is no postgres user to run the server as";
      return;
    }
    char pattern[] = "/tmp/tune-pg-XXXXXX";
    if (!mkdtemp(pattern)) {
      why_not_ = "cannot make a temporary folder";
      return;
    }
    dir_ = pattern;
    data_ = dir_ + "/data";
    if (root_ && chown(dir_.c_str(), pg->pw_uid, pg->pw_gid) != 0) {
      why_not_ = "cannot give the temporary folder to the postgres user";
      return;
    }
    std::string output;
    if (as_server_user({bin_ + "/initdb", "-D", data_, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"},
                       &output) != 0) {
      why_not_ = "initdb failed: " + output;
      return;
    }
    for (int attempt = 0; attempt < 5 && !started_; ++attempt) {
      port_ = free_port();
      std::string settings = "-p " + std::to_string(port_) + " -k " + dir_ +
                             " -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60";
      started_ = as_server_user(
                     {bin_ + "/pg_ctl", "-D", data_, "-o", settings, "-l", dir_ + "/log", "-w", "-t", "30", "start"},
                     &output) == 0;
    }
    if (!started_) why_not_ = "the server did not start: " + output;
  }

  int as_server_user(const std::vector<std::string>& argv, std::string* output = nullptr) {
    if (!root_) return run_argv(argv, output);
    std::vector<std::string> wrapped{"/usr/sbin/runuser", "-u", "postgres", "--"};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return run_argv(wrapped, output);
  }

  static int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    int port = 0;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0)
      port = ntohs(address.sin_port);
    if (fd >= 0) close(fd);
    return port;
  }

  std::string why_not_, bin_, dir_, data_;
  bool root_ = false, started_ = false;
  int port_ = 0;
  std::atomic<int> databases_{0};
};

}  // namespace tune::test

/// Skips the test (see skip.hpp) when no throw-away PostgreSQL server runs here.
#define REQUIRE_POSTGRES()                                                            \
  do {                                                                                \
    if (!::tune::test::postgres_server::shared().why_not().empty())                   \
      SKIP_TEST("PostgreSQL: " << ::tune::test::postgres_server::shared().why_not()); \
  } while (0)
