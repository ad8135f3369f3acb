// Running programs by argv with a timeout that kills the whole process group,
// which also dies with the process that ran it, under a process limit.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "kernels/process_checks.hpp"
#include "skip.hpp"
#include "tune/kernels/subprocess.hpp"

using tune::test::ends_soon;

TEST_CASE("run_process collects output and exit codes", "[kernels]") {
  auto ok = tune::run_process({"echo", "hello", "world"}, 10.0);
  CHECK(ok.ok());
  CHECK(ok.output == "hello world\n");
  auto failing = tune::run_process({"false"}, 10.0);
  CHECK(failing.started);
  CHECK(failing.exit_code == 1);
  CHECK_FALSE(failing.ok());
  // Arguments go through untouched: no shell interprets them.
  auto literal = tune::run_process({"echo", "$HOME;", "`id`"}, 10.0);
  CHECK(literal.output == "$HOME; `id`\n");
}

TEST_CASE("run_process reports a missing program instead of throwing", "[kernels]") {
  auto missing = tune::run_process({"/nonexistent/compiler"}, 10.0);
  CHECK_FALSE(missing.started);
  CHECK(missing.error.find("/nonexistent/compiler") != std::string::npos);
}

TEST_CASE("find_program looks a name up in PATH as execvp does and says why it found none", "[kernels]") {
  int error = -1;
  auto sh = tune::find_program("sh", error);
  CHECK(error == 0);
  REQUIRE(sh.front() == '/');
  CHECK(std::filesystem::path(sh).filename() == "sh");
  CHECK(tune::find_program("no-such-program-tune-engine", error) == "no-such-program-tune-engine");
  CHECK(error == ENOENT);
  // A name with a slash is taken as given, and checked.
  CHECK(tune::find_program("/bin/sh", error) == "/bin/sh");
  CHECK(error == 0);
  CHECK(tune::find_program("/no/such/dir/sh", error) == "/no/such/dir/sh");
  CHECK(error == ENOENT);
  // A file that is not executable is refused with EACCES.
  auto dir = std::filesystem::temp_directory_path() / ("tune-find-program-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "plain-file") << "not a program\n";
  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  ::setenv("PATH", dir.c_str(), 1);
  auto found = tune::find_program("plain-file", error);
  int plain_error = error;
  ::setenv("PATH", saved.c_str(), 1);
  std::filesystem::remove_all(dir);
  CHECK(found == "plain-file");
  CHECK(plain_error == EACCES);
}

TEST_CASE("run_process kills a program that overruns its timeout", "[kernels]") {
  auto slow = tune::run_process({"sleep", "30"}, 0.3);
  CHECK(slow.started);
  CHECK(slow.timed_out);
  CHECK(slow.seconds < 10.0);
}

TEST_CASE("run_process kills the whole process group of a program that overruns its timeout", "[kernels]") {
  // The shell starts a helper in its group (as g++ starts cc1plus) and waits;
  // the helper does not hold the output open, so only a group kill ends it.
  auto slow = tune::run_process({"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!; wait"}, 0.5);
  REQUIRE(slow.started);
  CHECK(slow.timed_out);
  long helper = std::stol(slow.output);
  REQUIRE(helper > 1);
  CHECK(ends_soon(helper));
}

TEST_CASE("run_process kills helpers a finished program left behind in its group", "[kernels]") {
  auto quick = tune::run_process({"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"}, 30.0);
  REQUIRE(quick.ok());
  long helper = std::stol(quick.output);
  REQUIRE(helper > 1);
  CHECK(ends_soon(helper));
}

TEST_CASE("run_process ends as the program ended: its exit code or its signal", "[kernels]") {
  auto three = tune::run_process({"sh", "-c", "exit 3"}, 10.0);
  CHECK(three.started);
  CHECK(three.exit_code == 3);
  CHECK(three.signal == 0);
  auto killed = tune::run_process({"sh", "-c", "kill -SEGV $$"}, 10.0);
  CHECK(killed.started);
  CHECK(killed.signal == SIGSEGV);
  CHECK_FALSE(killed.timed_out);
  auto denied = tune::run_process({"/dev/null"}, 10.0);  // a file, but not a program
  CHECK_FALSE(denied.started);
  CHECK(denied.error.find("/dev/null") != std::string::npos);
}

TEST_CASE("run_process sets the environment entries it is given over the caller's", "[kernels]") {
  ::setenv("TUNE_TEST_KEPT", "kept", 1);
  ::setenv("TUNE_TEST_REPLACED", "old", 1);
  auto shown = tune::run_process(
      {"sh", "-c",
       "echo \"$TUNE_TEST_KEPT $TUNE_TEST_REPLACED $TUNE_TEST_ADDED\"; env | grep -c '^TUNE_TEST_REPLACED='"},
      10.0, 1 << 20, {}, {"TUNE_TEST_REPLACED=new", "TUNE_TEST_ADDED=a=b"});
  auto plain = tune::run_process({"sh", "-c", "echo \"$TUNE_TEST_KEPT $TUNE_TEST_REPLACED $TUNE_TEST_ADDED\""}, 10.0);
  ::unsetenv("TUNE_TEST_KEPT");
  ::unsetenv("TUNE_TEST_REPLACED");
  REQUIRE(shown.ok());
  CHECK(shown.output == "kept new a=b\n1\n");
  REQUIRE(plain.ok());
  CHECK(plain.output == "kept old \n");
}

TEST_CASE("run_process gives the program no descriptor of the caller but its output", "[kernels]") {
  int kept = ::open("/dev/null", O_RDONLY);  // not close-on-exec
  REQUIRE(kept > 2);
  // The shell's descriptors, listed by another process (the shell's own
  // listing of its folder would open one more).
  auto listed = tune::run_process({"sh", "-c", "ls /proc/$$/fd; true"}, 10.0);
  ::close(kept);
  REQUIRE(listed.ok());
  CHECK(listed.output == "0\n1\n2\n");
}

TEST_CASE("run_process: a program and what it started die when the process that ran it is killed", "[kernels]") {
  // A process standing for the engine runs a shell that starts a helper (as
  // g++ starts cc1plus) and records both process ids; it is then killed with
  // SIGKILL, which no handler sees.
  auto file = std::filesystem::temp_directory_path() / ("tune-orphans-" + std::to_string(::getpid()));
  std::filesystem::remove(file);
  pid_t engine = ::fork();
  REQUIRE(engine >= 0);
  if (engine == 0) {
    tune::run_process({"sh", "-c",
                       "sleep 300 & echo $$ $! >" + file.string() + ".tmp && mv " + file.string() + ".tmp " +
                           file.string() + "; wait"},
                      600.0);
    ::_exit(0);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(engine, SIGKILL);
  ::waitpid(engine, nullptr, 0);
  long shell = 0, helper = 0;
  std::ifstream(file) >> shell >> helper;
  std::filesystem::remove(file);
  REQUIRE(shell > 1);
  REQUIRE(helper > 1);
  CHECK(ends_soon(shell));
  CHECK(ends_soon(helper));
}

TEST_CASE("run_process: the program dies with its guard when the guard alone is killed", "[kernels]") {
  // The program records its parent (the guard) and itself, then sleeps in a
  // session of its own (out of the group, which run_process kills once the
  // guard has ended); the guard is killed with SIGKILL, which it cannot pass
  // on: the program's own death signal ends it, and run_process reports the
  // guard's end.
  auto file = std::filesystem::temp_directory_path() / ("tune-guard-" + std::to_string(::getpid()));
  std::filesystem::remove(file);
  tune::process_result result;
  std::thread runner([&] {
    result = tune::run_process({"sh", "-c",
                                "echo $PPID $$ >" + file.string() + ".tmp && mv " + file.string() + ".tmp " +
                                    file.string() + " && exec setsid sleep 300"},
                               60.0);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  long guard = 0, program = 0;
  std::ifstream(file) >> guard >> program;
  std::filesystem::remove(file);
  if (guard > 1) ::kill(static_cast<pid_t>(guard), SIGKILL);
  runner.join();
  REQUIRE(guard > 1);
  REQUIRE(program > 1);
  CHECK(guard != ::getpid());
  CHECK(ends_soon(program));
  CHECK(result.started);
  CHECK(result.signal == SIGKILL);
  CHECK_FALSE(result.timed_out);
}

TEST_CASE("run_process: a fork bomb stops at max_processes", "[kernels]") {
  if (!tune::process_limits_enforced())
    SKIP_TEST("no pids cgroup can be made here (needs a writable cgroup file system)");
  // Bounded at 200 processes: without the limit every fork succeeds, the
  // shell says so and exits 0, and its sleeping children are killed with its
  // group.
  const std::string bomb = "i=0; while [ $i -lt 200 ]; do sleep 300 & i=$((i+1)); done; echo all forked";
  auto cut = tune::run_process({"sh", "-c", bomb}, 60.0, 1 << 20, tune::process_limits{20});
  INFO(cut.output);
  CHECK(cut.started);
  CHECK_FALSE(cut.ok());
  CHECK(cut.process_limit_reached);
  CHECK(cut.output.find("all forked") == std::string::npos);
  // The limit is per run: the next one starts afresh.
  auto again = tune::run_process({"sh", "-c", "sleep 0 & wait; echo fine"}, 60.0, 1 << 20, tune::process_limits{20});
  CHECK(again.ok());
  CHECK_FALSE(again.process_limit_reached);
  CHECK(again.output == "fine\n");
}
