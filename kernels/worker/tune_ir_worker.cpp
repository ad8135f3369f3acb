// tune-ir-worker: applies one edit list to an LLVM IR program in a process of
// its own, so that a crash inside LLVM ends this process and becomes a failed
// build of that variant, not the end of the run.
//
//   tune-ir-worker ORIGINAL.ll EDITS.json OUT.ll
//
// ORIGINAL.ll: the program with its instruction ids (tune::ir_program::text());
// EDITS.json: {"edits": [...]} (tune::to_json of an edit list). Writes the
// edited program to OUT.ll and, as the last line of stdout, the reply
// {"applied": n, "hash": "<16 hex digits>", "skipped": [{"index": i, "reason": text}]}.
// Bad arguments or unreadable files: a message on stderr, exit 2. No core file;
// the address space is capped (TUNE_IR_WORKER_MEMORY_MB, default 4096).
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "address_limit.hpp"
#include "tune/kernels/ir_program.hpp"

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void limit_resources() {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  long mb = 4096;
  if (const char* value = std::getenv("TUNE_IR_WORKER_MEMORY_MB"); value && *value) mb = std::atol(value);
  if (mb > 0) tune::worker::limit_address_space(static_cast<std::uint64_t>(mb) << 20);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tune-ir-worker ORIGINAL.ll EDITS.json OUT.ll\n");
    return 2;
  }
  limit_resources();
  try {
    auto original = read_file(argv[1]);
    auto edits = tune::edit_list_from_json(read_file(argv[2]));
    auto applied = tune::apply_edits(original, edits);
    {
      std::ofstream out(argv[3], std::ios::binary | std::ios::trunc);
      out << applied.ir;
      if (!out.flush()) throw std::runtime_error(std::string("cannot write ") + argv[3]);
    }
    nlohmann::json skipped = nlohmann::json::array();
    for (auto& s : applied.skipped) skipped.push_back({{"index", s.index}, {"reason", s.reason}});
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(applied.hash));
    nlohmann::json reply = {{"applied", applied.applied}, {"hash", hash}, {"skipped", skipped}};
    std::printf("%s\n", reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune-ir-worker: %s\n", e.what());
    return 2;
  }
}
