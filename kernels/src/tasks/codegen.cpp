// Code generation helpers shared by the kernel templates (codegen.hpp).
#include "codegen.hpp"

#include <stdexcept>

namespace tune::codegen {

std::vector<std::int64_t> tuple_value(const search_space& space, const configuration& config, const std::string& name) {
  auto index = space.find(name);
  if (!index) throw std::logic_error("template parameter '" + name + "' missing from its space");
  return std::get<std::vector<std::int64_t>>(space.parameters()[*index]->value(config[*index]));
}

double number_value(const search_space& space, const configuration& config, const std::string& name) {
  auto index = space.find(name);
  if (!index) throw std::logic_error("template parameter '" + name + "' missing from its space");
  return std::get<double>(space.parameters()[*index]->value(config[*index]));
}

std::shared_ptr<kernel_program> new_task_program(const task_spec& task, std::vector<parameter_ptr> parameters,
                                                 const std::string& backend,
                                                 const std::vector<std::string>& constraints) {
  auto program = std::make_shared<kernel_program>();
  program->key = task.to_string() + ":" + backend;
  auto space = std::make_shared<search_space>(std::move(parameters), task.to_string() + " (" + backend + ")");
  if (!constraints.empty()) space->add_constraints(constraints);
  program->space = space;
  program->arguments = task_arguments(task);
  program->reference_source = reference_source(task);
  program->flops = task.flops();
  return program;
}

std::vector<parameter_ptr> conv2d_parameters(const task_spec& task) {
  return {make_factorization_parameter("tile_f", task.out_channels, 4),
          make_factorization_parameter("tile_y", task.out_height(), 4),
          make_factorization_parameter("tile_x", task.out_width(), 4),
          make_factorization_parameter("tile_rc", task.in_channels, 2),
          make_factorization_parameter("tile_ry", task.kernel_h, 2),
          make_factorization_parameter("tile_rx", task.kernel_w, 2),
          make_discrete_parameter("auto_unroll_max_step", {0, 125, 256}),
          make_categorical_parameter("unroll_explicit", {parameter_value(0.0), parameter_value(1.0)})};
}

conv2d_tiles conv2d_tiles_of(const search_space& space, const configuration& config) {
  conv2d_tiles t;
  t.f = tuple_value(space, config, "tile_f");
  t.y = tuple_value(space, config, "tile_y");
  t.x = tuple_value(space, config, "tile_x");
  t.rc = tuple_value(space, config, "tile_rc");
  t.ry = tuple_value(space, config, "tile_ry");
  t.rx = tuple_value(space, config, "tile_rx");
  t.max_step = static_cast<std::int64_t>(number_value(space, config, "auto_unroll_max_step"));
  t.explicit_unroll = number_value(space, config, "unroll_explicit") != 0;
  return t;
}

// No header: <cstdlib>, <cstring> and <utility> were 9,000 lines, about a
// fifth of a MatMul build's time (docs/kernels.md, "Builds"). The two C
// library functions are declared as glibc declares them (the attributes tell
// the optimiser the same: the same code), memcpy is the compiler's builtin,
// and index sequences come from the compiler (GCC's __integer_pack, clang's
// __make_integer_seq: the GEVO-ML workloads compile the MatMul source with
// clang).
//
// GCC compiles the templates without predictive commoning (its -O3 pass that
// keeps values loaded in one iteration for the next): on the convolutions'
// unrolled reductions it spilled the register tile, and their kernels ran up
// to 1.67x slower, their builds took up to 1.8x as long (docs/kernels.md,
// "Builds"). A pragma, not a flag, so that an emitted kernel compiled by GCC
// is the code that was measured and clang (which has no such pass) is left
// alone; cpu_kernel_epilogue restores the includer's options.
const char* const cpu_kernel_prelude = R"(#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-predictive-commoning")
#endif
extern "C" {
void* aligned_alloc(__SIZE_TYPE__, __SIZE_TYPE__) noexcept
    __attribute__((__malloc__, __alloc_align__(1), __alloc_size__(2), __warn_unused_result__));
void* calloc(__SIZE_TYPE__, __SIZE_TYPE__) noexcept
    __attribute__((__malloc__, __alloc_size__(1, 2), __warn_unused_result__));
}
namespace {
template <class T, T... I>
struct index_list {};
#ifdef __clang__
template <long N>
using indices_below = __make_integer_seq<index_list, long, N>;
#else
template <long N>
using indices_below = index_list<long, __integer_pack(N)...>;
#endif
}  // namespace
)";

// `vec{} + x` would be a scalar 0.0f + x (not a no-op: x may be -0.0f), then
// a register broadcast: two extra floating-point instructions per
// multiply-add. The braced list is a broadcast load.
const char* const cpu_vector_helpers = R"(
typedef float vec __attribute__((vector_size(VL * sizeof(float))));
inline vec load(const float* p) {
  vec v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
template <long... lane>
inline vec splat(float x, index_list<long, lane...>) {
  return vec{((void)lane, x)...};
}
inline vec splat(float x) { return splat(x, indices_below<VL>()); }
// One reduction step of a register tile of R rows x NV vectors, the
// micro-kernel the MatMul and Conv2D templates share: NV vectors of w (one
// row of a B panel, or a weight block's channels) times x[r * XS] broadcast
// (row r of an A panel, or output pixel r's input), for rows R0 .. R1 - 1
// (the Conv2D template leaves out pixels whose input is the padding's).
template <long R, long NV, long XS, long R0 = 0, long R1 = R>
__attribute__((always_inline)) inline void rank1(vec (&acc)[R][NV], const float* __restrict x,
                                                 const float* __restrict w) {
  if constexpr (R0 >= R1) return;
  vec wv[NV];
#pragma GCC unroll 64
  for (long v = 0; v < NV; ++v) wv[v] = load(w + v * VL);
#pragma GCC unroll 64
  for (long r = R0; r < R1; ++r) {
    vec a = splat(x[r * XS]);
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) acc[r][v] += a * wv[v];
  }
}
)";

std::string cpu_transpose_code(std::int64_t lanes) {
  if (lanes < 2) return "inline void transpose(vec (&)[VL]) {}  // one lane: nothing to move\n";
  // __builtin_shufflevector: clang, and GCC from 12 (the GEVO-ML workloads
  // compile the MatMul source with clang).
  std::string code = "__attribute__((always_inline)) inline void transpose(vec (&r)[VL]) {\n";
  for (std::int64_t w = 1; w < lanes; w *= 2) {
    std::string low, high;
    for (std::int64_t lane = 0; lane < lanes; ++lane) {
      const bool set = (lane & w) != 0;
      // Second operand's lanes are numbered lanes .. 2 lanes - 1.
      low += ", " + std::to_string(set ? lanes + lane - w : lane);
      high += ", " + std::to_string(set ? lanes + lane : lane + w);
    }
    const std::string other = "r[i + " + std::to_string(w) + "]";
    code += "#pragma GCC unroll 16\n  for (long i = 0; i < VL; ++i)\n    if (!(i & " + std::to_string(w) +
            ")) {\n      vec lo = __builtin_shufflevector(r[i], " + other + low +
            ");\n      vec hi = __builtin_shufflevector(r[i], " + other + high + ");\n      r[i] = lo;\n      " +
            other + " = hi;\n    }\n";
  }
  return code + "}\n";
}

std::int64_t native_vector_lanes() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx")) return 8;
#endif
  return 4;
}

std::int64_t vector_registers() { return native_vector_lanes() == 16 ? 32 : 16; }

std::int64_t vector_lanes(std::int64_t extent) {
  // Never wider than a register: GCC lowers a 16-lane vector on an AVX2
  // machine so badly that 4 x 16 register tiles ran at 5.4 GFLOP/s with 16
  // lanes and 55.0 with 8 (MM1, the same configurations, 2026-11-23).
  static const std::int64_t native = native_vector_lanes();
  for (std::int64_t lanes : {16, 8, 4, 2})
    if (lanes <= native && extent % lanes == 0) return lanes;
  return 1;
}

// max_unrolled_body bounds compile time: over 360 MM1 trials with g++ 12
// -O3, bodies of at most 2048 vector multiply-adds compiled in 0.4 s on
// average (slowest 20 s); the 26 larger ones took 9-30 s on average, six hit
// the 60 s compile timeout, and none ran faster than the best smaller one.
// MatMul's is 1024 (max_matmul_body): over 13,263 MatMul trials in 122
// results databases (2026-11-29), bodies of 1025-2048 were 1.4% of the
// trials and 10.4% of the build time (1.4 s a build against 0.14 s at most
// 256) and none was its run's best; the best bodies were at most 1024.
std::string cpu_register_tile_problem(const std::string& tile, std::int64_t accumulators, std::int64_t unrolled,
                                      std::int64_t body_limit) {
  // Twice the AVX-512 register file: beyond it the compiler only spills.
  constexpr std::int64_t max_accumulators = 64;
  if (accumulators > max_accumulators)
    return "register tile " + tile + " needs " + std::to_string(accumulators) + " vector accumulators; at most " +
           std::to_string(max_accumulators);
  if (accumulators * unrolled > body_limit)
    return "register tile " + tile + " unrolled " + std::to_string(unrolled) + " times has " +
           std::to_string(accumulators * unrolled) + " vector multiply-adds; at most " + std::to_string(body_limit);
  return {};
}

const char* const cpu_kernel_epilogue = R"(
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
)";

std::vector<std::string> cpu_template_gcc_build_flags() {
  // GCC's value numbering asks at most 1,000 alias queries per memory access
  // by default; the unrolled convolutions made it most of their build time.
  // At 100 the 41 C2 sources of a run compiled to the same assembly in 0.64x
  // the time (docs/kernels.md, "Builds").
  return {"--param=sccvn-max-alias-queries-per-access=100"};
}

std::vector<std::string> cpu_template_flags(int threads) {
  // ISO C++ mode turns floating-point contraction off; FMAs need it on. The
  // templates' function-local statics are set up by the one thread that calls
  // the entry: without guards (__cxa_guard_acquire) a kernel needs only the C
  // library and links without libstdc++ (cpu/compile.cpp).
  std::vector<std::string> flags{"-ffp-contract=fast", "-fno-threadsafe-statics"};
  if (threads > 1) flags.push_back("-fopenmp");
  return flags;
}

std::string constant(const std::string& name, std::int64_t value) {
  return "constexpr long " + name + " = " + std::to_string(value) + ";\n";
}

std::vector<kernel_argument> task_arguments(const task_spec& t) {
  if (t.op == operator_kind::conv2d) {
    return {float_array_argument("output", t.batch * t.out_channels * t.out_height() * t.out_width(), true),
            float_array_argument("image", t.batch * t.in_channels * t.height * t.width),
            float_array_argument("weights", t.out_channels * t.in_channels * t.kernel_h * t.kernel_w)};
  }
  return {float_array_argument("C", t.batch * t.n * t.m, true), float_array_argument("A", t.batch * t.n * t.k),
          float_array_argument("B", t.batch * t.k * t.m)};
}

// Each task's reference is reference_part(args, begin, end), computing
// outputs [begin, end) of OUTPUTS independent ones (Conv2D's batch x filter
// planes, MatMul's rows); tune_reference splits them over the cores the
// calling thread may run on (tune_reference_threads: its affinity mask, so a
// process pinned to one core starts no thread it could not run). Each output
// is computed by one thread, in the same order as by one, so the result does
// not depend on the thread count; a thread that cannot be started (a process
// limit) leaves its part to the calling thread. POSIX threads and C headers
// only: std::thread's C++ headers would add half a second of compiling to the
// first trial of every task, more than the threads save on small ones.
constexpr const char* reference_threads = R"(
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
)";
constexpr const char* reference_entry = R"(
constexpr long max_threads = 64;
extern "C" long tune_reference_threads() {
  cpu_set_t allowed;
  long threads = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed)
                                                                      : sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  if (threads > max_threads) threads = max_threads;
  if (threads > OUTPUTS) threads = OUTPUTS;
  return threads;
}
struct reference_range {
  void* const* args;
  long begin, end;
};
static void* reference_thread(void* range) {
  auto* r = static_cast<reference_range*>(range);
  reference_part(r->args, r->begin, r->end);
  return nullptr;
}
extern "C" void tune_reference(void* const* args) {
  const long threads = tune_reference_threads();
  pthread_t ids[max_threads];
  reference_range ranges[max_threads];
  bool started[max_threads] = {};
  for (long t = 1; t < threads; ++t) {
    ranges[t] = {args, OUTPUTS * t / threads, OUTPUTS * (t + 1) / threads};
    started[t] = pthread_create(&ids[t], nullptr, reference_thread, &ranges[t]) == 0;
  }
  reference_part(args, 0, OUTPUTS / threads);
  for (long t = 1; t < threads; ++t)
    if (!started[t]) reference_part(args, ranges[t].begin, ranges[t].end);
  for (long t = 1; t < threads; ++t)
    if (started[t]) pthread_join(ids[t], nullptr);
}
)";

std::string reference_source(const task_spec& t) {
  std::string s = "// Naive reference of " + t.to_string() + ", on every core it may run on";
  s += reference_threads;
  if (t.op == operator_kind::conv2d) {
    s += constant("B", t.batch) + constant("C", t.in_channels) + constant("H", t.height) + constant("W", t.width) +
         constant("F", t.out_channels) + constant("KH", t.kernel_h) + constant("KW", t.kernel_w) +
         constant("S", t.stride) + constant("P", t.pad) + constant("HO", t.out_height()) +
         constant("WO", t.out_width());
    s += R"(
constexpr long OUTPUTS = B * F;  // planes of the output
static void reference_part(void* const* args, long begin, long end) {
  float* out = static_cast<float*>(args[0]);
  const float* in = static_cast<const float*>(args[1]);
  const float* w = static_cast<const float*>(args[2]);
  for (long bf = begin; bf < end; ++bf) {
    const long b = bf / F, f = bf % F;
    for (long y = 0; y < HO; ++y)
      for (long x = 0; x < WO; ++x) {
        double sum = 0;
        for (long c = 0; c < C; ++c)
          for (long ry = 0; ry < KH; ++ry) {
            long h = y * S + ry - P;
            if (h < 0 || h >= H) continue;
            for (long rx = 0; rx < KW; ++rx) {
              long v = x * S + rx - P;
              if (v < 0 || v >= W) continue;
              sum += double(in[((b * C + c) * H + h) * W + v]) * w[((f * C + c) * KH + ry) * KW + rx];
            }
          }
        out[((b * F + f) * HO + y) * WO + x] = float(sum);
      }
  }
}
)";
    return s + reference_entry;
  }
  s += constant("BATCH", t.batch) + constant("N", t.n) + constant("K", t.k) + constant("M", t.m) +
       "constexpr bool TA = " + (t.transpose_a ? "true" : "false") + ", TB = " + (t.transpose_b ? "true" : "false") +
       ";\n";
  s += R"(
constexpr long OUTPUTS = BATCH * N;  // rows of the output
static void reference_part(void* const* args, long begin, long end) {
  float* c = static_cast<float*>(args[0]);
  const float* a = static_cast<const float*>(args[1]);
  const float* b = static_cast<const float*>(args[2]);
  double* row = new double[M];
  for (long pi = begin; pi < end; ++pi) {
    const long p = pi / N, i = pi % N;
    const float* ap = a + p * N * K;
    const float* bp = b + p * K * M;
    for (long j = 0; j < M; ++j) row[j] = 0;
    for (long k = 0; k < K; ++k) {
      double x = TA ? ap[k * N + i] : ap[i * K + k];
      for (long j = 0; j < M; ++j) row[j] += x * (TB ? bp[j * K + k] : bp[k * M + j]);
    }
    for (long j = 0; j < M; ++j) c[(p * N + i) * M + j] = float(row[j]);
  }
  delete[] row;
}
)";
  return s + reference_entry;
}

}  // namespace tune::codegen
