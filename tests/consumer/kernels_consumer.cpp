// Prints the measuring worker the installed tune::kernels finds by itself and
// fails unless it lies under the prefix given as argument.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tune/kernels/cpu_backend.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kernels_consumer PREFIX\n");
    return 2;
  }
  ::unsetenv("TUNE_KERNEL_WORKER");
  namespace fs = std::filesystem;
  auto worker = fs::weakly_canonical(tune::kernel_worker_path({}));
  auto prefix = fs::weakly_canonical(argv[1]);
  std::printf("kernels_consumer: worker %s\n", worker.c_str());
  bool under_prefix = worker.string().rfind(prefix.string() + "/", 0) == 0;
  return under_prefix && fs::is_regular_file(worker) ? 0 : 1;
}
