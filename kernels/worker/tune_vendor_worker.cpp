// tune-vendor-worker: times one vendor library kernel on a built-in task's
// problem alternately with the tuned kernel of the same task, in one process
// pinned to the tuned kernel's cores: tuned, vendor, tuned, vendor, … for
// "rounds" rounds, each side a short burst, so that each round's ratio
// compares two times taken within a fraction of a second of each other.
//
//   tune-vendor-worker '<request JSON>'
//
// Request: {"library": "onednn" | "openblas", "variant": see below,
//           "op": "matmul" | "batch_matmul" | "conv2d",
//           matmul: "batch", "n", "k", "m", "transpose_a", "transpose_b";
//           conv2d: "batch", "in_channels", "height", "width", "out_channels",
//                   "kernel_h", "kernel_w", "stride", "pad";
//           "tuned": {"library": shared object, "entry": name, "prepare": name
//                     or "", "finish": name or "", "arguments": [{"type",
//                     "size", "output", "value"}] (as tune-kernel-worker's)},
//           "threads": t, "first_core": c, "rounds": n, "min_time_s": s}
// Variants: onednn "own layouts" (Conv2D: the layouts oneDNN prefers, the
// reorders into them left out of the time) or "plain" (the task's row-major /
// NCHW tensors); openblas "default" (the core type OpenBLAS picks) or a core
// type name (OPENBLAS_CORETYPE, e.g. SkylakeX). OpenBLAS reads its core type
// when it is loaded, so the worker runs itself again with the environment set
// (the tuned kernel then runs in that process too).
// The tuned kernel gets the inputs tune-kernel-worker gives it (input_fill.hpp);
// its prepare, entry and finish run once before the timed runs, which run the
// entry alone. A burst is one warm-up run, then runs until at least three and
// min_time_s in all; its time is their median.
// Reply (stdout, one line): {"detail": what the library ran, "rounds":
// [{"tuned_s", "vendor_s": burst medians, "tuned_at_s", "vendor_at_s": when
// each burst began, seconds after the first}, …]} or {"error": text} with
// exit code 1.
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "input_fill.hpp"

#ifdef TUNE_WITH_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename();
#endif
#ifdef TUNE_WITH_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

int reply(const json& j, int code) {
  std::printf("%s\n", j.dump().c_str());
  return code;
}

/// A kernel ready to run: everything it needs lives in the closure.
struct timed_kernel {
  std::function<void()> run;
  std::string detail;
};

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// One burst: a warm-up run (the other kernel ran last and left its data in
// the caches), then runs until at least three and min_time in all; the median.
double burst_seconds(const std::function<void()>& run, double min_time) {
  run();
  std::vector<double> times;
  double total = 0;
  while (times.size() < 3 || total < min_time) {
    auto start = clock_type::now();
    run();
    times.push_back(seconds_since(start));
    total += times.back();
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

void pin(int first_core, int count) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = first_core; c < first_core + count; ++c) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof set, &set);
}

long get(const json& r, const char* key) { return r.at(key).get<long>(); }

// The tuned kernel: its shared object loaded, its arguments built, and the
// checked run's steps (prepare, entry, finish) run once.
timed_kernel tuned_kernel(const json& t) {
  using entry_function = void (*)(void* const*);
  const std::string library = t.at("library");
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error(std::string("cannot load the tuned kernel: ") + dlerror());
  auto symbol = [&](const std::string& name) {
    if (name.empty()) return entry_function{};
    auto f = reinterpret_cast<entry_function>(dlsym(handle, name.c_str()));
    if (!f) throw std::runtime_error("the tuned kernel " + library + " has no symbol '" + name + "'");
    return f;
  };
  const auto entry = symbol(t.value("entry", "tune_entry"));
  const auto prepare = symbol(t.value("prepare", "")), finish = symbol(t.value("finish", ""));
  struct buffers {
    std::vector<tune::worker::argument_storage> bytes;
    std::vector<void*> pointers;
  };
  auto b = std::make_shared<buffers>();
  for (const auto& a : t.at("arguments")) b->bytes.push_back(tune::worker::argument_bytes(a, b->bytes.size()));
  for (auto& bytes : b->bytes) b->pointers.push_back(bytes.data());
  if (prepare) prepare(b->pointers.data());
  entry(b->pointers.data());
  if (finish) finish(b->pointers.data());
  return {[b, entry] { entry(b->pointers.data()); }, library};
}

#ifdef TUNE_WITH_OPENBLAS
timed_kernel openblas(const json& r, int threads) {
  if (r.at("op") == "conv2d") throw std::invalid_argument("OpenBLAS has no convolution");
  const long batch = get(r, "batch"), n = get(r, "n"), k = get(r, "k"), m = get(r, "m");
  const bool ta = r.at("transpose_a"), tb = r.at("transpose_b");
  // On 64-byte boundaries, as the tuned kernel's arguments.
  using floats = std::vector<float, tune::worker::aligned_allocator<float>>;
  struct matrices {
    floats a, b, c;
  };
  // The output on huge pages where the system allows, as the tuned kernel's.
  auto x = std::make_shared<matrices>(matrices{floats(batch * n * k, 0.5f), floats(batch * k * m, 0.25f),
                                               tune::worker::huge_page_storage<floats>(batch * n * m)});
  auto batch_range = [x, n, k, m, ta, tb](long first, long last) {
    for (long p = first; p < last; ++p)
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(n), int(m), int(k),
                  1.0f, x->a.data() + p * n * k, int(ta ? n : k), x->b.data() + p * k * m, int(tb ? k : m), 0.0f,
                  x->c.data() + p * n * m, int(m));
  };
  const std::string detail = std::string("core ") + openblas_get_corename();
  if (batch == 1 || threads == 1) {
    // One sgemm on all the threads, or the batch's sgemms in turn on one.
    openblas_set_num_threads(threads);
    return {[batch_range, batch] { batch_range(0, batch); }, detail};
  }
  // One single-threaded sgemm per matrix, the batch split over the threads.
  openblas_set_num_threads(1);
  return {[batch_range, batch, threads] {
            std::vector<std::thread> workers;
            for (int t = 0; t < threads; ++t)
              workers.emplace_back(batch_range, batch * t / threads, batch * (t + 1) / threads);
            for (auto& w : workers) w.join();
          },
          detail};
}
#endif

#ifdef TUNE_WITH_ONEDNN
void fill(const dnnl::memory& mem, float value) {
  auto* p = static_cast<float*>(mem.get_data_handle());
  std::fill(p, p + mem.get_desc().get_size() / sizeof(float), value);
}

timed_kernel onednn(const json& r, const std::string& variant, int threads) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  if (variant != "own layouts" && variant != "plain")
    throw std::invalid_argument("oneDNN variant '" + variant + "': expected 'own layouts' or 'plain'");
  omp_set_num_threads(threads);
  struct state {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::unordered_map<int, memory> args;
    dnnl::primitive primitive;
    // The destination's storage: on huge pages where the system allows, as
    // the tuned kernel's output.
    tune::worker::argument_storage destination;
  };
  auto destination = [](state& st, const memory::desc& desc) {
    st.destination = tune::worker::huge_page_storage<tune::worker::argument_storage>(desc.get_size());
    return memory(desc, st.engine, st.destination.data());
  };
  auto s = std::make_shared<state>();
  std::string impl;
  if (r.at("op") == "conv2d") {
    const long b = get(r, "batch"), c = get(r, "in_channels"), h = get(r, "height"), w = get(r, "width"),
               f = get(r, "out_channels"), kh = get(r, "kernel_h"), kw = get(r, "kernel_w"), st = get(r, "stride"),
               p = get(r, "pad");
    const long ho = (h + 2 * p - kh) / st + 1, wo = (w + 2 * p - kw) / st + 1;
    const bool own = variant == "own layouts";
    memory::desc src({b, c, h, w}, f32, own ? tag::any : tag::nchw);
    memory::desc wei({f, c, kh, kw}, f32, own ? tag::any : tag::oihw);
    memory::desc dst({b, f, ho, wo}, f32, own ? tag::any : tag::nchw);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_auto, src,
                                         wei, dst, {st, st}, {p, p}, {p, p});
    dnnl::convolution_forward::primitive_desc pd(desc, s->engine);
    impl = pd.impl_info_str();
    s->args = {{DNNL_ARG_SRC, memory(pd.src_desc(), s->engine)},
               {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), s->engine)},
               {DNNL_ARG_DST, destination(*s, pd.dst_desc())}};
    s->primitive = dnnl::convolution_forward(pd);
  } else {
    const long batch = get(r, "batch"), n = get(r, "n"), k = get(r, "k"), m = get(r, "m");
    const bool ta = r.at("transpose_a"), tb = r.at("transpose_b");
    memory::desc a({batch, n, k}, f32, ta ? memory::dims{n * k, 1, n} : memory::dims{n * k, k, 1});
    memory::desc bm({batch, k, m}, f32, tb ? memory::dims{k * m, 1, k} : memory::dims{k * m, m, 1});
    memory::desc cm({batch, n, m}, f32, tag::abc);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, bm, cm), s->engine);
    impl = pd.impl_info_str();
    s->args = {{DNNL_ARG_SRC, memory(pd.src_desc(), s->engine)},
               {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), s->engine)},
               {DNNL_ARG_DST, destination(*s, pd.dst_desc())}};
    s->primitive = dnnl::matmul(pd);
  }
  fill(s->args.at(DNNL_ARG_SRC), 0.5f);
  fill(s->args.at(DNNL_ARG_WEIGHTS), 0.25f);
  return {[s] {
            s->primitive.execute(s->stream, s->args);
            s->stream.wait();
          },
          impl};
}
#endif

timed_kernel vendor_kernel(const json& r, const std::string& library, const std::string& variant, int threads) {
  if (library == "openblas") {
#ifdef TUNE_WITH_OPENBLAS
    return openblas(r, threads);
#else
    throw std::invalid_argument("OpenBLAS: not built in (install libopenblas-dev and rebuild)");
#endif
  }
  if (library == "onednn") {
#ifdef TUNE_WITH_ONEDNN
    return onednn(r, variant, threads);
#else
    throw std::invalid_argument("oneDNN: not built in (install libdnnl-dev and rebuild)");
#endif
  }
  throw std::invalid_argument("unknown library '" + library + "': expected onednn or openblas");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tune-vendor-worker '<request JSON>'\n");
    return 2;
  }
  try {
    const json r = json::parse(argv[1]);
    const std::string library = r.at("library"), variant = r.at("variant");
    const int threads = r.value("threads", 1), rounds = r.value("rounds", 5);
    const double min_time = r.value("min_time_s", 0.2);
    if (threads < 1) throw std::invalid_argument("threads must be at least 1");
    if (rounds < 1) throw std::invalid_argument("rounds must be at least 1");
    if (library == "openblas") {
      // The core type is read when OpenBLAS loads: run again with it set.
      const char* now = std::getenv("OPENBLAS_CORETYPE");
      const std::string wanted = variant == "default" ? "" : variant;
      if (wanted != (now ? now : "")) {
        if (wanted.empty())
          unsetenv("OPENBLAS_CORETYPE");
        else
          setenv("OPENBLAS_CORETYPE", wanted.c_str(), 1);
        execv("/proc/self/exe", argv);
        throw std::runtime_error("cannot run itself again with OPENBLAS_CORETYPE set");
      }
    }
    pin(r.value("first_core", 0), threads);
    const timed_kernel vendor = vendor_kernel(r, library, variant, threads);
    if (!r.contains("tuned"))
      throw std::invalid_argument("no \"tuned\" kernel in the request: the vendor kernel is timed alternately with it");
    const timed_kernel tuned = tuned_kernel(r.at("tuned"));
    auto list = json::array();
    const auto start = clock_type::now();
    for (int round = 0; round < rounds; ++round) {
      const double tuned_at = seconds_since(start), tuned_s = burst_seconds(tuned.run, min_time);
      const double vendor_at = seconds_since(start), vendor_s = burst_seconds(vendor.run, min_time);
      list.push_back(
          {{"tuned_s", tuned_s}, {"vendor_s", vendor_s}, {"tuned_at_s", tuned_at}, {"vendor_at_s", vendor_at}});
    }
    return reply({{"detail", vendor.detail}, {"rounds", list}}, 0);
  } catch (const std::exception& e) {
    return reply({{"error", e.what()}}, 1);
  }
}
