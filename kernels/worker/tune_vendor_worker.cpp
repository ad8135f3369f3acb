// tune-vendor-worker: times one vendor library kernel on a built-in task's
// problem, in a process of its own, pinned to the tuned kernel's cores.
//
//   tune-vendor-worker '<request JSON>'
//
// Request: {"library": "onednn" | "openblas", "variant": see below,
//           "op": "matmul" | "batch_matmul" | "conv2d", "flops": f,
//           matmul: "batch", "n", "k", "m", "transpose_a", "transpose_b";
//           conv2d: "batch", "in_channels", "height", "width", "out_channels",
//                   "kernel_h", "kernel_w", "stride", "pad";
//           "threads": t, "first_core": c, "min_time_s": s}
// Variants: onednn "own layouts" (Conv2D: the layouts oneDNN prefers, the
// reorders into them left out of the time) or "plain" (the task's row-major /
// NCHW tensors); openblas "default" (the core type OpenBLAS picks) or a core
// type name (OPENBLAS_CORETYPE, e.g. SkylakeX). OpenBLAS reads its core type
// when it is loaded, so the worker runs itself again with the environment set.
// Reply (stdout, one line): {"gflops": g, "seconds": median, "detail": text}
// or {"error": text} with exit code 1.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

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

int reply(const json& j, int code) {
  std::printf("%s\n", j.dump().c_str());
  return code;
}

// Median of repeats after a warm-up: at least three and min_time in all.
template <typename F>
double median_seconds(F&& run, double min_time) {
  run();
  std::vector<double> times;
  double total = 0;
  while (times.size() < 3 || total < min_time) {
    auto start = std::chrono::steady_clock::now();
    run();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    times.push_back(s);
    total += s;
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void pin(int first_core, int count) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = first_core; c < first_core + count; ++c) CPU_SET(c, &set);
  sched_setaffinity(0, sizeof set, &set);
}

long get(const json& r, const char* key) { return r.at(key).get<long>(); }

#ifdef TUNE_WITH_OPENBLAS
json openblas(const json& r, int threads, double min_time) {
  if (r.at("op") == "conv2d") throw std::invalid_argument("OpenBLAS has no convolution");
  const long batch = get(r, "batch"), n = get(r, "n"), k = get(r, "k"), m = get(r, "m");
  const bool ta = r.at("transpose_a"), tb = r.at("transpose_b");
  std::vector<float> a(batch * n * k, 0.5f), b(batch * k * m, 0.25f), c(batch * n * m);
  auto batch_range = [&](long first, long last) {
    for (long p = first; p < last; ++p)
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(n), int(m), int(k),
                  1.0f, a.data() + p * n * k, int(ta ? n : k), b.data() + p * k * m, int(tb ? k : m), 0.0f,
                  c.data() + p * n * m, int(m));
  };
  double seconds = 0;
  if (batch == 1 || threads == 1) {
    // One sgemm on all the threads, or the batch's sgemms in turn on one.
    openblas_set_num_threads(threads);
    seconds = median_seconds([&] { batch_range(0, batch); }, min_time);
  } else {
    // One single-threaded sgemm per matrix, the batch split over the threads.
    openblas_set_num_threads(1);
    seconds = median_seconds(
        [&] {
          std::vector<std::thread> workers;
          for (int t = 0; t < threads; ++t)
            workers.emplace_back(batch_range, batch * t / threads, batch * (t + 1) / threads);
          for (auto& w : workers) w.join();
        },
        min_time);
  }
  return {{"seconds", seconds}, {"detail", std::string("core ") + openblas_get_corename()}};
}
#endif

#ifdef TUNE_WITH_ONEDNN
void fill(const dnnl::memory& mem, float value) {
  auto* p = static_cast<float*>(mem.get_data_handle());
  std::fill(p, p + mem.get_desc().get_size() / sizeof(float), value);
}

json onednn(const json& r, const std::string& variant, int threads, double min_time) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  if (variant != "own layouts" && variant != "plain")
    throw std::invalid_argument("oneDNN variant '" + variant + "': expected 'own layouts' or 'plain'");
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::unordered_map<int, memory> args;
  dnnl::primitive primitive;
  std::string impl;
  if (r.at("op") == "conv2d") {
    const long b = get(r, "batch"), c = get(r, "in_channels"), h = get(r, "height"), w = get(r, "width"),
               f = get(r, "out_channels"), kh = get(r, "kernel_h"), kw = get(r, "kernel_w"), s = get(r, "stride"),
               p = get(r, "pad");
    const long ho = (h + 2 * p - kh) / s + 1, wo = (w + 2 * p - kw) / s + 1;
    const bool own = variant == "own layouts";
    memory::desc src({b, c, h, w}, f32, own ? tag::any : tag::nchw);
    memory::desc wei({f, c, kh, kw}, f32, own ? tag::any : tag::oihw);
    memory::desc dst({b, f, ho, wo}, f32, own ? tag::any : tag::nchw);
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_auto, src,
                                         wei, dst, {s, s}, {p, p}, {p, p});
    dnnl::convolution_forward::primitive_desc pd(desc, engine);
    impl = pd.impl_info_str();
    args = {{DNNL_ARG_SRC, memory(pd.src_desc(), engine)},
            {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), engine)},
            {DNNL_ARG_DST, memory(pd.dst_desc(), engine)}};
    primitive = dnnl::convolution_forward(pd);
  } else {
    const long batch = get(r, "batch"), n = get(r, "n"), k = get(r, "k"), m = get(r, "m");
    const bool ta = r.at("transpose_a"), tb = r.at("transpose_b");
    memory::desc a({batch, n, k}, f32, ta ? memory::dims{n * k, 1, n} : memory::dims{n * k, k, 1});
    memory::desc bm({batch, k, m}, f32, tb ? memory::dims{k * m, 1, k} : memory::dims{k * m, m, 1});
    memory::desc cm({batch, n, m}, f32, tag::abc);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, bm, cm), engine);
    impl = pd.impl_info_str();
    args = {{DNNL_ARG_SRC, memory(pd.src_desc(), engine)},
            {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), engine)},
            {DNNL_ARG_DST, memory(pd.dst_desc(), engine)}};
    primitive = dnnl::matmul(pd);
  }
  fill(args.at(DNNL_ARG_SRC), 0.5f);
  fill(args.at(DNNL_ARG_WEIGHTS), 0.25f);
  double seconds = median_seconds(
      [&] {
        primitive.execute(stream, args);
        stream.wait();
      },
      min_time);
  return {{"seconds", seconds}, {"detail", impl}};
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tune-vendor-worker '<request JSON>'\n");
    return 2;
  }
  try {
    const json r = json::parse(argv[1]);
    const std::string library = r.at("library"), variant = r.at("variant");
    const int threads = r.value("threads", 1);
    const double min_time = r.value("min_time_s", 0.5);
    if (threads < 1) throw std::invalid_argument("threads must be at least 1");
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
    json out;
    if (library == "openblas") {
#ifdef TUNE_WITH_OPENBLAS
      out = openblas(r, threads, min_time);
#else
      throw std::invalid_argument("OpenBLAS: not built in (install libopenblas-dev and rebuild)");
#endif
    } else if (library == "onednn") {
#ifdef TUNE_WITH_ONEDNN
      out = onednn(r, variant, threads, min_time);
#else
      throw std::invalid_argument("oneDNN: not built in (install libdnnl-dev and rebuild)");
#endif
    } else {
      throw std::invalid_argument("unknown library '" + library + "': expected onednn or openblas");
    }
    out["gflops"] = r.at("flops").get<double>() / out["seconds"].get<double>() / 1e9;
    return reply(out, 0);
  } catch (const std::exception& e) {
    return reply({{"error", e.what()}}, 1);
  }
}
