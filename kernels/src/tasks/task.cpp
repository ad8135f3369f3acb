#include "tune/kernels/task.hpp"

#include <charconv>
#include <sstream>
#include <stdexcept>

#include "codegen.hpp"
#include "tune/kernels/cpu_backend.hpp"

namespace tune {

namespace {

constexpr const char* expected_forms =
    "expected matmul:NxKxM (e.g. matmul:512x1024x1024), bmm:BxNxKxM[:nn|tn|nt] (e.g. bmm:960x128x128x64:nt) "
    "or conv2d:BxCxHxW:FxKHxKW[:sS][:pP] (e.g. conv2d:512x3x227x227:64x11x11:s4:p0)";

[[noreturn]] void bad_task(const std::string& text, const std::string& problem) {
  throw std::invalid_argument("task '" + text + "': " + problem + "; " + expected_forms);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::stringstream stream(text);
  while (std::getline(stream, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

std::int64_t positive(const std::string& text, const std::string& field, const std::string& whole) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value <= 0)
    bad_task(whole, field + " '" + text + "' is not a positive integer");
  return value;
}

std::vector<std::int64_t> dims(const std::string& text, std::size_t count, const std::string& field,
                               const std::string& whole) {
  auto parts = split(text, 'x');
  if (parts.size() != count)
    bad_task(whole, field + " '" + text + "' should have " + std::to_string(count) + " sizes separated by 'x'");
  std::vector<std::int64_t> out;
  for (const auto& p : parts) out.push_back(positive(p, field, whole));
  return out;
}

}  // namespace

task_spec parse_task(const std::string& text) {
  auto parts = split(text, ':');
  if (parts.empty() || parts[0].empty()) bad_task(text, "no operator");
  task_spec task;
  const auto& op = parts[0];
  if (op == "matmul") {
    if (parts.size() != 2) bad_task(text, "matmul takes one shape");
    auto d = dims(parts[1], 3, "shape", text);
    task.op = operator_kind::matmul;
    task.n = d[0];
    task.k = d[1];
    task.m = d[2];
  } else if (op == "bmm") {
    if (parts.size() < 2 || parts.size() > 3) bad_task(text, "bmm takes a shape and optionally a layout");
    auto d = dims(parts[1], 4, "shape", text);
    task.op = operator_kind::batch_matmul;
    task.batch = d[0];
    task.n = d[1];
    task.k = d[2];
    task.m = d[3];
    std::string layout = parts.size() == 3 ? parts[2] : "nn";
    if (layout == "tn") {
      task.transpose_a = true;
    } else if (layout == "nt") {
      task.transpose_b = true;
    } else if (layout != "nn") {
      bad_task(text, "layout '" + layout + "' is not one of nn, tn, nt");
    }
  } else if (op == "conv2d") {
    if (parts.size() < 3 || parts.size() > 5) bad_task(text, "conv2d takes an image shape and a kernel shape");
    auto image = dims(parts[1], 4, "image shape", text);
    auto kernel = dims(parts[2], 3, "kernel shape", text);
    task.op = operator_kind::conv2d;
    task.batch = image[0];
    task.in_channels = image[1];
    task.height = image[2];
    task.width = image[3];
    task.out_channels = kernel[0];
    task.kernel_h = kernel[1];
    task.kernel_w = kernel[2];
    bool seen_stride = false, seen_pad = false;
    for (std::size_t i = 3; i < parts.size(); ++i) {
      const auto& p = parts[i];
      if (p.size() >= 2 && p[0] == 's' && !seen_stride) {
        task.stride = positive(p.substr(1), "stride", text);
        seen_stride = true;
      } else if (p.size() >= 2 && p[0] == 'p' && !seen_pad) {
        if (p == "p0") {
          task.pad = 0;
        } else {
          task.pad = positive(p.substr(1), "padding", text);
        }
        seen_pad = true;
      } else {
        bad_task(text, "option '" + p + "' is neither sS (stride) nor pP (padding), or is repeated");
      }
    }
    if (task.height + 2 * task.pad < task.kernel_h || task.width + 2 * task.pad < task.kernel_w)
      bad_task(text, "the kernel is larger than the padded image");
  } else {
    bad_task(text, "unknown operator '" + op + "'");
  }
  return task;
}

double task_spec::flops() const {
  if (op == operator_kind::conv2d)
    return 2.0 * batch * out_channels * out_height() * out_width() * in_channels * kernel_h * kernel_w;
  return 2.0 * batch * n * k * m;
}

std::string task_spec::to_string() const {
  auto x = [](auto... v) {
    std::string out;
    ((out += (out.empty() ? "" : "x") + std::to_string(v)), ...);
    return out;
  };
  switch (op) {
    case operator_kind::matmul:
      return "matmul:" + x(n, k, m);
    case operator_kind::batch_matmul:
      return "bmm:" + x(batch, n, k, m) + ":" + (transpose_a ? "tn" : transpose_b ? "nt" : "nn");
    case operator_kind::conv2d:
      return "conv2d:" + x(batch, in_channels, height, width) + ":" + x(out_channels, kernel_h, kernel_w) + ":s" +
             std::to_string(stride) + ":p" + std::to_string(pad);
  }
  return "?";
}

std::vector<std::string> task_backend_names() {
  std::vector<std::string> names{"cpu"};
#ifdef TUNE_WITH_NVRTC
  names.push_back("cuda");
#endif
#ifdef TUNE_WITH_HIP
  names.push_back("hip");
#endif
  return names;
}

kernel_program_ptr make_cpu_task_program(const task_spec& task, int threads) {
  return task.op == operator_kind::conv2d ? codegen::make_cpu_conv2d_program(task, threads)
                                          : codegen::make_cpu_matmul_program(task, threads);
}

backend_ptr make_cuda_task_backend(const task_spec& task, const task_backend_options& options);
backend_ptr make_hip_task_backend(const task_spec& task, const task_backend_options& options);

backend_ptr make_task_backend(const task_spec& task, const std::string& backend_name,
                              const task_backend_options& options) {
  if (backend_name == "cpu") return make_cpu_backend(make_cpu_task_program(task, options.threads), options);
#ifdef TUNE_WITH_NVRTC
  if (backend_name == "cuda") return make_cuda_task_backend(task, options);
#endif
#ifdef TUNE_WITH_HIP
  if (backend_name == "hip") return make_hip_task_backend(task, options);
#endif
  std::string names;
  for (const auto& n : task_backend_names()) names += (names.empty() ? "" : ", ") + n;
  throw std::invalid_argument("backend '" + backend_name + "' is not available for task " + task.to_string() +
                              "; this build has: " + names);
}

backend_ptr make_task_backend(const std::string& task, const std::string& backend_name,
                              const task_backend_options& options) {
  return make_task_backend(parse_task(task), backend_name, options);
}

namespace codegen {

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
                                                 const std::string& backend) {
  auto program = std::make_shared<kernel_program>();
  program->key = task.to_string() + ":" + backend;
  program->space = std::make_shared<search_space>(std::move(parameters), task.to_string() + " (" + backend + ")");
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

// `vec{} + x` would be a scalar 0.0f + x (not a no-op: x may be -0.0f), then
// a register broadcast: two extra floating-point instructions per
// multiply-add. The braced list is a broadcast load.
const char* const cpu_vector_helpers = R"(
typedef float vec __attribute__((vector_size(VL * sizeof(float))));
inline vec load(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <long... lane>
inline vec splat(float x, std::integer_sequence<long, lane...>) {
  return vec{((void)lane, x)...};
}
inline vec splat(float x) { return splat(x, std::make_integer_sequence<long, VL>()); }
)";

std::int64_t native_vector_lanes() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx")) return 8;
#endif
  return 4;
}

std::int64_t vector_lanes(std::int64_t extent) {
  // Never wider than a register: GCC lowers a 16-lane vector on an AVX2
  // machine so badly that 4 x 16 register tiles ran at 5.4 GFLOP/s with 16
  // lanes and 55.0 with 8 (MM1, the same configurations, 2026-11-23).
  static const std::int64_t native = native_vector_lanes();
  for (std::int64_t lanes : {16, 8, 4, 2})
    if (lanes <= native && extent % lanes == 0) return lanes;
  return 1;
}

std::string cpu_register_tile_problem(const std::string& tile, std::int64_t accumulators, std::int64_t unrolled) {
  // Twice the AVX-512 register file: beyond it the compiler only spills.
  constexpr std::int64_t max_accumulators = 64;
  // Vector multiply-adds of one unrolled body, to bound compile time. Over
  // 360 MM1 trials with g++ 12 -O3, bodies of at most 2048 compiled in 0.4 s
  // on average (slowest 20 s); the 26 larger ones took 9-30 s on average, six
  // hit the 60 s compile timeout, and none ran faster than the best smaller one.
  constexpr std::int64_t max_unrolled_body = 2048;
  if (accumulators > max_accumulators)
    return "register tile " + tile + " needs " + std::to_string(accumulators) + " vector accumulators; at most " +
           std::to_string(max_accumulators);
  if (accumulators * unrolled > max_unrolled_body)
    return "register tile " + tile + " unrolled " + std::to_string(unrolled) + " times has " +
           std::to_string(accumulators * unrolled) + " vector multiply-adds; at most " +
           std::to_string(max_unrolled_body);
  return {};
}

std::vector<std::string> cpu_template_flags(int threads) {
  // ISO C++ mode turns floating-point contraction off; FMAs need it on.
  std::vector<std::string> flags{"-ffp-contract=fast"};
  if (threads > 1) flags.push_back("-fopenmp");
  return flags;
}

std::string constant(const std::string& name, std::int64_t value) {
  return "constexpr long " + name + " = " + std::to_string(value) + ";\n";
}

std::vector<kernel_argument> task_arguments(const task_spec& t) {
  if (t.op == operator_kind::conv2d) {
    return {{"output", argument_type::f32_array, t.batch * t.out_channels * t.out_height() * t.out_width(), true},
            {"image", argument_type::f32_array, t.batch * t.in_channels * t.height * t.width},
            {"weights", argument_type::f32_array, t.out_channels * t.in_channels * t.kernel_h * t.kernel_w}};
  }
  return {{"C", argument_type::f32_array, t.batch * t.n * t.m, true},
          {"A", argument_type::f32_array, t.batch * t.n * t.k},
          {"B", argument_type::f32_array, t.batch * t.k * t.m}};
}

std::string reference_source(const task_spec& t) {
  std::string s = "// Naive reference of " + t.to_string() + "\n#include <vector>\n";
  if (t.op == operator_kind::conv2d) {
    s += constant("B", t.batch) + constant("C", t.in_channels) + constant("H", t.height) + constant("W", t.width) +
         constant("F", t.out_channels) + constant("KH", t.kernel_h) + constant("KW", t.kernel_w) +
         constant("S", t.stride) + constant("P", t.pad) + constant("HO", t.out_height()) +
         constant("WO", t.out_width());
    s += R"(
extern "C" void tune_reference(void* const* args) {
  float* out = static_cast<float*>(args[0]);
  const float* in = static_cast<const float*>(args[1]);
  const float* w = static_cast<const float*>(args[2]);
  for (long b = 0; b < B; ++b)
    for (long f = 0; f < F; ++f)
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
)";
    return s;
  }
  s += constant("BATCH", t.batch) + constant("N", t.n) + constant("K", t.k) + constant("M", t.m) +
       "constexpr bool TA = " + (t.transpose_a ? "true" : "false") + ", TB = " + (t.transpose_b ? "true" : "false") +
       ";\n";
  s += R"(
extern "C" void tune_reference(void* const* args) {
  float* c = static_cast<float*>(args[0]);
  const float* a = static_cast<const float*>(args[1]);
  const float* b = static_cast<const float*>(args[2]);
  std::vector<double> row(M);
  for (long p = 0; p < BATCH; ++p) {
    const float* ap = a + p * N * K;
    const float* bp = b + p * K * M;
    for (long i = 0; i < N; ++i) {
      for (long j = 0; j < M; ++j) row[j] = 0;
      for (long k = 0; k < K; ++k) {
        double x = TA ? ap[k * N + i] : ap[i * K + k];
        for (long j = 0; j < M; ++j) row[j] += x * (TB ? bp[j * K + k] : bp[k * M + j]);
      }
      for (long j = 0; j < M; ++j) c[(p * N + i) * M + j] = float(row[j]);
    }
  }
}
)";
  return s;
}

}  // namespace codegen

}  // namespace tune
