// bench_builds: where the build of a CPU kernel spends its time, and builds
// the old way and the new way (docs/kernels.md, "Builds") side by side: build
// seconds per candidate and the GFLOP/s of the kernels each way gives.
//
//   bench_builds [--task MM1] [--conv-batch 8] [--configs 20] [--seed 1] [--rounds 3]
//                [--stage-rounds 1] [--measure-rounds 3] [--min-time 0.1] [--core 0] [--compiler c++]
//                [--only 1,17] [--vary-flags "-fno-predictive-commoning ..." | --vary-link]
//
// --configs valid configurations of the task (MM1-MM3, BMM1-BMM3, C1, C2 or a
// task string) are drawn with --seed, skipping those that fail to
// instantiate (--only: of those, keep these indices). Then:
//
//  1. stages: each configuration's source, both ways, through the compiler
//     stage by stage (start-up on an empty file, -E, -fsyntax-only, -S, as,
//     -c, the link of the object, the whole build) and the spawn of a
//     process by run_process; --stage-rounds rounds.
//  2. builds: each configuration built the old way and the new way
//     alternately (which goes first alternates), each build into a compile
//     cache folder of its own so that nothing is reused; --rounds rounds.
//  3. kernels: the kernels of the first round timed by the worker on core
//     --core, the two ways alternately, --measure-rounds rounds; each way's
//     best time counts.
//
// Times are wall seconds and the CPU seconds of the compiler processes
// (user + system of the waited-for children): on a shared machine the CPU
// seconds move less with the load.
//
// The old way is rebuilt here, not kept in the library: the generated source
// of today with the three headers it included before (<cstdlib>, <cstring>,
// <utility>) put back in front, the flags of before (without
// -fno-threadsafe-statics), and one compiler run with the compiler's own link
// (libstdc++, libm, libgcc_s, the start files), as compile_shared_object ran
// it. The new way is the CPU backend's build.
//
// --vary-flags "F ...": compare compiler flags instead. The old way is the
// CPU backend's build without these flags, the new way the same with them
// (added where the backend does not pass them already); both are built here,
// as the backend builds (one compiler run, linked against nothing).
//
// --vary-link: compare links. The old way is the backend's build of before
// 2026-11-30, linked with the C library and libgcc (-z defs), built here; the
// new way is the CPU backend's build.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <numeric>
#include <sstream>
#include <vector>

#include "bench_text.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/subprocess.hpp"
#include "tune/kernels/task.hpp"

namespace {

namespace fs = std::filesystem;

struct bench_options {
  std::string task = "MM1";
  long conv_batch = 8;
  int configs = 20;
  std::uint64_t seed = 1;
  int rounds = 3;
  int stage_rounds = 1;
  int measure_rounds = 3;
  double min_time = 0.1;
  int core = 0;
  std::string compiler = "c++";
  std::vector<int> only;   // indices of the drawn configurations to keep
  std::string vary_flags;  // compare the backend's flags without and with these
  bool vary_link = false;  // compare the C library's link with the backend's
};

// Seconds of wall time and of the CPU time of waited-for children.
struct cost {
  double wall = 0, cpu = 0;
};

double children_cpu_s() {
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

template <class F>
cost cost_of(F&& work) {
  double cpu = children_cpu_s();
  auto start = std::chrono::steady_clock::now();
  work();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), children_cpu_s() - cpu};
}

double quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return 0.0;
  std::sort(xs.begin(), xs.end());
  double at = q * static_cast<double>(xs.size() - 1);
  auto low = static_cast<std::size_t>(at);
  auto high = std::min(low + 1, xs.size() - 1);
  return xs[low] + (at - static_cast<double>(low)) * (xs[high] - xs[low]);
}

double mean(const std::vector<double>& xs) {
  return xs.empty() ? 0.0 : std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

struct costs {
  std::vector<double> wall, cpu;
  void add(const cost& c) {
    wall.push_back(c.wall);
    cpu.push_back(c.cpu);
  }
};

// The two ways of building one configuration.
struct way {
  std::string source;
  std::vector<std::string> flags;      // the compiler's flags (with -shared)
  std::vector<std::string> link;       // added when it links: before -o
  std::vector<std::string> libraries;  // added when it links: after the input
};

const char* old_headers = "#include <cstdlib>\n#include <cstring>\n#include <utility>\n";

way old_way(const tune::kernel_program& program, const tune::configuration& config) {
  way w;
  w.source = old_headers + program.source(config);
  w.flags = {"-std=c++20", "-fPIC", "-shared"};
  for (const auto& f : tune::cpu_kernel_flags(program, config))
    if (f != "-fno-threadsafe-statics") w.flags.push_back(f);
  return w;
}

// As the CPU backend builds a template's kernel (cpu_backend.cpp,
// cpu/compile.cpp): one compiler run that links against nothing (the backend
// then reads the undefined symbols; the templates' are the C library's).
way backend_way(const tune::kernel_program& program, const tune::configuration& config, const std::string& compiler) {
  way w;
  w.source = program.source(config);
  w.flags = tune::cpu_build_flags(program, config, compiler);
  w.link = {"-nostdlib"};
  return w;
}

// --vary-link's old way: the backend's build before 2026-11-30, linked with
// the C library and libgcc, every symbol resolved there (-z defs).
way c_library_way(const tune::kernel_program& program, const tune::configuration& config, const std::string& compiler) {
  way w = backend_way(program, config, compiler);
  w.link = {"-nostdlib", "-Wl,-z,defs"};
  w.libraries = {"-lc", "-lgcc"};
  return w;
}

// --vary-flags: the backend's build without `varied` (off) or with them (on).
way flags_way(const tune::kernel_program& program, const tune::configuration& config, const std::string& compiler,
              const std::vector<std::string>& varied, bool on) {
  way w = backend_way(program, config, compiler);
  std::erase_if(w.flags,
                [&](const std::string& f) { return std::find(varied.begin(), varied.end(), f) != varied.end(); });
  if (on) w.flags.insert(w.flags.end(), varied.begin(), varied.end());
  return w;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

using argv_type = std::vector<std::string>;

argv_type operator+(argv_type a, const argv_type& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The compiler on `input` (a source, or an object with `flags` {"-shared"})
// into the shared object `output`.
argv_type build_argv(const std::string& cc, const way& w, const argv_type& flags, const std::string& input,
                     const std::string& output) {
  return argv_type{cc} + flags + w.link + argv_type{"-o", output, input} + w.libraries;
}

void must_run(const argv_type& argv) {
  auto result = tune::run_process(argv, 600.0);
  if (!result.ok()) {
    std::string line;
    for (const auto& a : argv) line += a + " ";
    throw std::runtime_error("failed: " + line + "\n" + result.output);
  }
}

// One configuration's files of one way for the stage table.
struct stage_files {
  std::string source, object, assembly;
};

// 1. The compiler's stages for every configuration's source, both ways.
void stages(const std::vector<way>& olds, const std::vector<way>& news, const fs::path& dir, const bench_options& o) {
  const std::string& cc = o.compiler;
  const std::string out_o = (dir / "stage.o").string(), out_s = (dir / "stage.s").string(),
                    out_so = (dir / "stage.so").string();
  using make_argv = std::function<argv_type(const way&, const stage_files&)>;
  const std::vector<std::pair<std::string, make_argv>> list{
      {"process spawn (run_process of true)", [](const way&, const stage_files&) { return argv_type{"true"}; }},
      {"compiler start-up (-c of an empty file)",
       [&](const way&, const stage_files&) { return argv_type{cc, "-x", "c++", "-c", "/dev/null", "-o", out_o}; }},
      {"preprocess (-E)",
       [&](const way& w, const stage_files& f) {
         return argv_type{cc} + w.flags + argv_type{"-E", f.source, "-o", "/dev/null"};
       }},
      {"parse (-fsyntax-only)",
       [&](const way& w, const stage_files& f) {
         return argv_type{cc} + w.flags + argv_type{"-fsyntax-only", f.source};
       }},
      {"compile to assembly (-S)",
       [&](const way& w, const stage_files& f) {
         return argv_type{cc} + w.flags + argv_type{"-S", f.source, "-o", out_s};
       }},
      {"assemble the -S output (as)",
       [&](const way&, const stage_files& f) {
         return argv_type{"as", f.assembly, "-o", out_o};
       }},
      {"compile and assemble (-c)",
       [&](const way& w, const stage_files& f) {
         return argv_type{cc} + w.flags + argv_type{"-c", f.source, "-o", out_o};
       }},
      {"link the -c output (-shared)",
       [&](const way& w, const stage_files& f) { return build_argv(cc, w, {"-shared"}, f.object, out_so); }},
      {"whole build (source to shared object)",
       [&](const way& w, const stage_files& f) { return build_argv(cc, w, w.flags, f.source, out_so); }},
  };
  // Each way's source, assembly and object, made once.
  std::vector<std::array<stage_files, 2>> files(olds.size());
  for (std::size_t i = 0; i < olds.size(); ++i)
    for (int w = 0; w < 2; ++w) {
      const way& one = w == 0 ? olds[i] : news[i];
      const std::string base = (dir / fmt::format("{}-{}", w == 0 ? "old" : "new", i)).string();
      files[i][w] = {base + ".cpp", base + ".o", base + ".s"};
      if (auto problem = tune::compile_cache::write_file(files[i][w].source, one.source); !problem.empty())
        throw std::runtime_error(problem);
      must_run(argv_type{cc} + one.flags + argv_type{"-c", files[i][w].source, "-o", files[i][w].object});
      must_run(argv_type{cc} + one.flags + argv_type{"-S", files[i][w].source, "-o", files[i][w].assembly});
    }
  std::vector<std::array<costs, 2>> measured(list.size());
  for (int round = 0; round < o.stage_rounds; ++round)
    for (std::size_t i = 0; i < olds.size(); ++i)
      for (std::size_t k = 0; k < list.size(); ++k)
        for (int n = 0; n < 2; ++n) {
          int w = (n + static_cast<int>(i) + round) % 2;
          auto argv = list[k].second(w == 0 ? olds[i] : news[i], files[i][w]);
          measured[k][w].add(cost_of([&] { must_run(argv); }));
        }
  fmt::print("\nStages ({} sources each way, {} round(s); seconds per run)\n", olds.size(), o.stage_rounds);
  fmt::print("{:<44} {:>23} | {:>23}\n", "", "old way", "new way");
  fmt::print("{:<44} {:>7} {:>7} {:>7} | {:>7} {:>7} {:>7}\n", "stage", "wall", "median", "CPU", "wall", "median",
             "CPU");
  for (std::size_t k = 0; k < list.size(); ++k) {
    const auto& [old_costs, new_costs] = measured[k];
    fmt::print("{:<44} {:7.4f} {:7.4f} {:7.4f} | {:7.4f} {:7.4f} {:7.4f}\n", list[k].first, mean(old_costs.wall),
               quantile(old_costs.wall, 0.5), mean(old_costs.cpu), mean(new_costs.wall), quantile(new_costs.wall, 0.5),
               mean(new_costs.cpu));
  }
  std::fflush(stdout);
}

// The old way's build: a compile cache folder of its own, the source written
// and one compiler run with the compiler's own link (compile_shared_object
// before "Faster builds").
tune::build_result build_old(const way& w, const fs::path& cache_dir, const std::string& compiler) {
  tune::compile_cache cache(cache_dir / "cpu", ".so");
  std::vector<std::string> key{w.source, compiler};
  key.insert(key.end(), w.flags.begin(), w.flags.end());
  fs::path cpp = fs::path(cache.artifact_path(key)).replace_extension(".cpp");
  return cache.fetch(key, [&](const fs::path& so) {
    tune::build_result out{tune::status::compile_error, {}, 0.0, {}};
    if (auto problem = tune::compile_cache::write_file(cpp, w.source); !problem.empty()) {
      out.message = problem;
      return out;
    }
    auto result = tune::run_process(build_argv(compiler, w, w.flags, cpp.string(), so.string()), 600.0, 64 * 1024);
    out.compile_s = result.seconds;
    out.message = result.output;
    if (result.ok()) out.state = tune::status::ok;
    return out;
  });
}

void print_spread(const char* label, const costs& c) {
  fmt::print(
      "{:<8} wall mean {:.3f} s, median {:.3f} s, p10-p90 {:.3f}-{:.3f} s | CPU mean {:.3f} s, median {:.3f} s\n",
      label, mean(c.wall), quantile(c.wall, 0.5), quantile(c.wall, 0.1), quantile(c.wall, 0.9), mean(c.cpu),
      quantile(c.cpu, 0.5));
}

}  // namespace

int main(int argc, char** argv) {
  bench_options o;
  CLI::App app{"Where a CPU kernel's build spends its time; builds the old way and the new way, and their kernels"};
  tune::bench::last_value_wins(app);
  app.add_option("--task", o.task, "MM1-MM3, BMM1-BMM3, C1, C2 or a task string");
  app.add_option("--conv-batch", o.conv_batch, "Batch of C1 and C2");
  app.add_option("--configs", o.configs, "Configurations drawn")->check(tune::bench::more_than_zero());
  app.add_option("--seed", o.seed, "Seed of the draw");
  app.add_option("--rounds", o.rounds, "Builds of each configuration each way")->check(tune::bench::more_than_zero());
  app.add_option("--stage-rounds", o.stage_rounds, "Rounds of the stage table (0: none)");
  app.add_option("--measure-rounds", o.measure_rounds, "Timings of each kernel each way (0: none)");
  app.add_option("--min-time", o.min_time, "Kernel time of one timing, seconds")->check(tune::bench::more_than_zero());
  app.add_option("--core", o.core, "Core the kernels run on");
  app.add_option("--compiler", o.compiler, "Host compiler");
  tune::bench::add_list(app, "--only", o.only,
                        "Keep only these of the drawn configurations (their indices, e.g. 1,17)");
  auto* vary_flags =
      app.add_option("--vary-flags", o.vary_flags,
                     "Compare compiler flags: the old way is the backend's build without these, the new way with them");
  app.add_flag("--vary-link", o.vary_link,
               "Compare links: the old way links with the C library and libgcc (-z defs), the new way is the "
               "backend's build (linked against nothing, its undefined symbols checked)")
      ->excludes(vary_flags);
  if (auto rc = tune::bench::parse_options(app, argc, argv)) return *rc;
  const auto varied = split_words(o.vary_flags);

  auto task = tune::parse_task(tune::bench::paper_task(o.task, o.conv_batch, false));
  auto program = tune::make_cpu_task_program(task, 1);
  const fs::path scratch = fs::temp_directory_path() / fmt::format("bench-builds-{}", ::getpid());
  fs::create_directories(scratch);
  struct remove_at_exit {
    fs::path dir;
    ~remove_at_exit() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{scratch};

  tune::rng_type rng(o.seed);
  std::vector<tune::configuration> configs;
  for (int tries = 0; static_cast<int>(configs.size()) < o.configs && tries < 100000; ++tries) {
    auto config = program->space->draw_valid(rng);
    if (config && (!program->check || program->check(*config).empty())) configs.push_back(*config);
  }
  std::vector<int> drawn(configs.size());  // each configuration's index in the draw
  std::iota(drawn.begin(), drawn.end(), 0);
  if (!o.only.empty()) {
    std::vector<tune::configuration> kept_configs;
    drawn.clear();
    for (int i : o.only)
      if (i >= 0 && i < static_cast<int>(configs.size())) {
        kept_configs.push_back(configs[i]);
        drawn.push_back(i);
      }
    configs = kept_configs;
  }
  std::vector<way> olds, news;
  for (const auto& c : configs) {
    if (!varied.empty()) {
      olds.push_back(flags_way(*program, c, o.compiler, varied, false));
      news.push_back(flags_way(*program, c, o.compiler, varied, true));
    } else {
      olds.push_back(o.vary_link ? c_library_way(*program, c, o.compiler) : old_way(*program, c));
      news.push_back(backend_way(*program, c, o.compiler));
    }
  }
  auto version = tune::run_process({o.compiler, "--version"}, 30.0).output;
  fmt::print("bench_builds: {} ({}), {} configurations (seed {}), compiler {}: {}\n", o.task, task.to_string(),
             configs.size(), o.seed, o.compiler, version.substr(0, version.find('\n')));
  if (!varied.empty())
    fmt::print("old way: the backend's build without {}; new way: with them\n", fmt::join(varied, " "));
  if (o.vary_link) fmt::print("old way: linked with the C library and libgcc; new way: the backend's build\n");
  std::fflush(stdout);

  if (o.stage_rounds > 0) {
    fs::create_directories(scratch / "stages");
    stages(olds, news, scratch / "stages", o);
  }

  // 2. Builds, each into a cache of its own; the first round's shared objects
  // are kept for the kernels' timings.
  tune::task_backend_options build_options;
  build_options.compiler = o.compiler;
  int fresh = 0;
  auto fresh_cache = [&] { return scratch / fmt::format("cache-{}", fresh++); };
  auto build_new = [&](const tune::configuration& config, const fs::path& dir) {
    auto options = build_options;
    options.cache_dir = dir.string();
    return tune::make_cpu_backend(program, options)->build(config, 600.0);
  };
  // One of each first, untimed: the compiler's identity is looked up once per process.
  build_old(olds[0], fresh_cache(), o.compiler);
  build_new(configs[0], fresh_cache());
  std::vector<std::array<std::string, 2>> kept(configs.size());
  std::array<costs, 2> builds;
  for (int round = 0; round < o.rounds; ++round)
    for (std::size_t i = 0; i < configs.size(); ++i)
      for (int n = 0; n < 2; ++n) {
        int w = (n + static_cast<int>(i) + round) % 2;
        auto dir = fresh_cache();
        tune::build_result built;
        builds[w].add(cost_of([&] {
          built = w == 0 || !varied.empty() ? build_old(w == 0 ? olds[i] : news[i], dir, o.compiler)
                                            : build_new(configs[i], dir);
        }));
        if (built.state != tune::status::ok)
          throw std::runtime_error(fmt::format("configuration {} does not build the {} way: {}",
                                               program->space->to_json(configs[i]), w == 0 ? "old" : "new",
                                               built.message));
        if (round == 0) {
          kept[i][w] = built.artifact;
        } else {
          std::error_code ignored;
          fs::remove_all(dir, ignored);
        }
      }
  fmt::print("\nBuilds: {} configurations x {} round(s) each way, alternately, each into an empty compile cache\n",
             configs.size(), o.rounds);
  print_spread("old way", builds[0]);
  print_spread("new way", builds[1]);
  fmt::print("new / old: wall mean {:.3f}, median {:.3f} | CPU mean {:.3f}, median {:.3f}\n",
             mean(builds[1].wall) / mean(builds[0].wall), quantile(builds[1].wall, 0.5) / quantile(builds[0].wall, 0.5),
             mean(builds[1].cpu) / mean(builds[0].cpu), quantile(builds[1].cpu, 0.5) / quantile(builds[0].cpu, 0.5));
  fmt::print("builds per second with one compile worker (1 / wall mean): old {:.2f}, new {:.2f}\n",
             1.0 / mean(builds[0].wall), 1.0 / mean(builds[1].wall));
  std::fflush(stdout);

  if (o.measure_rounds <= 0) return 0;
  // 3. The kernels, timed alternately on one core; each way's best counts.
  tune::task_backend_options measure;
  measure.compiler = o.compiler;
  measure.cache_dir = (scratch / "measure").string();
  measure.first_core = o.core;
  measure.measurement.min_time_s = o.min_time;
  measure.measurement.min_repeats = 2;
  auto runner = tune::make_cpu_backend(program, measure);
  fmt::print("\nKernels: best of {} timing(s) each way on core {}, alternately (GFLOP/s)\n", o.measure_rounds, o.core);
  fmt::print("{:>3} {:>9} {:>9} {:>9} {:>12} {:>12}  {}\n", "#", "old", "new", "new/old", "old spread", "new spread",
             "configuration");
  std::vector<double> ratios, spreads;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    std::array<std::vector<double>, 2> gflops;
    for (int round = 0; round < o.measure_rounds; ++round)
      for (int n = 0; n < 2; ++n) {
        int w = (n + static_cast<int>(i) + round) % 2;
        tune::build_result built{tune::status::ok, kept[i][w], 0.0, {}};
        auto run = runner->run(configs[i], built, 0, 600.0);
        if (run.state != tune::status::ok)
          throw std::runtime_error(fmt::format("configuration {} built the {} way: {}",
                                               program->space->to_json(configs[i]), w == 0 ? "old" : "new",
                                               run.message));
        gflops[w].push_back(task.flops() / run.time_ms / 1e6);
      }
    double best_old = *std::max_element(gflops[0].begin(), gflops[0].end());
    double best_new = *std::max_element(gflops[1].begin(), gflops[1].end());
    auto spread = [](const std::vector<double>& g) {
      return *std::max_element(g.begin(), g.end()) / *std::min_element(g.begin(), g.end());
    };
    ratios.push_back(best_new / best_old);
    spreads.push_back(spread(gflops[0]));
    spreads.push_back(spread(gflops[1]));
    fmt::print("{:>3} {:9.2f} {:9.2f} {:9.3f} {:12.3f} {:12.3f}  {}\n", drawn[i], best_old, best_new, ratios.back(),
               spread(gflops[0]), spread(gflops[1]), program->space->to_json(configs[i]));
    std::fflush(stdout);
  }
  fmt::print("GFLOP/s new / old per configuration: median {:.3f}, min {:.3f}, max {:.3f}\n", quantile(ratios, 0.5),
             *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()));
  fmt::print("run-to-run spread (best / worst timing of one kernel one way): median {:.3f}, max {:.3f}\n",
             quantile(spreads, 0.5), *std::max_element(spreads.begin(), spreads.end()));
  return 0;
}
