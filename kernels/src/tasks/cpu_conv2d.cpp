// Direct 2D convolution on the CPU with the OpEvo parameters of TVM's
// conv2d_direct schedule, mapped onto CPU loops:
//
//   tile_f, tile_y, tile_x = (o0, o1, o2, o3) over output channels, rows and
//       columns: o0 parallel chunks (fused with the batch), o1 block loops,
//       o2 register tiles per block, o3 the register tile (channels are the
//       vector lanes: weights are repacked channel-innermost)
//   tile_rc, tile_ry, tile_rx = (outer, inner) over input channels and kernel
//       rows and columns: outer loops accumulate into the output, inner ones
//       run inside the register tile
//   auto_unroll_max_step  the innermost reduction loops are unrolled while the
//       product of their extents stays within it (0: none)
//   unroll_explicit       1: the generator writes the unrolled steps out
//       itself; 0: it asks the compiler with #pragma GCC unroll
#include <stdexcept>

#include "codegen.hpp"

namespace tune::codegen {

namespace {

const char* conv_head = R"(
constexpr long NV = FR / VL;
constexpr long HP = H + 2 * P, WP = W + 2 * P;

// One register tile: YR x XR output pixels of FR channels.
__attribute__((always_inline)) inline void tile(const float* __restrict in, const float* __restrict wp,
                                                float* __restrict out, long f, long y, long x, long c0, long ry0,
                                                long rx0, bool first) {
  vec acc[YR][XR][NV];
#pragma GCC unroll 64
  for (long i = 0; i < YR; ++i)
#pragma GCC unroll 64
    for (long j = 0; j < XR; ++j)
#pragma GCC unroll 64
      for (long v = 0; v < NV; ++v)
        for (long l = 0; l < VL; ++l)
          acc[i][j][v][l] = first ? 0.0f : out[((f + v * VL + l) * HO + y + i) * WO + x + j];
  auto step = [&](long c, long ry, long rx) __attribute__((always_inline)) {
    const float* w = wp + (((c0 + c) * KH + ry0 + ry) * KW + rx0 + rx) * F + f;
    vec wv[NV];
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) wv[v] = load(w + v * VL);
    const float* src = in + ((c0 + c) * HP + y * S + ry0 + ry) * WP + x * S + rx0 + rx;
#pragma GCC unroll 64
    for (long i = 0; i < YR; ++i)
#pragma GCC unroll 64
      for (long j = 0; j < XR; ++j) {
        vec a = splat(src[(i * S) * WP + j * S]);
#pragma GCC unroll 64
        for (long v = 0; v < NV; ++v) acc[i][j][v] += a * wv[v];
      }
  };
REDUCTION
#pragma GCC unroll 64
  for (long i = 0; i < YR; ++i)
#pragma GCC unroll 64
    for (long j = 0; j < XR; ++j)
#pragma GCC unroll 64
      for (long v = 0; v < NV; ++v)
        for (long l = 0; l < VL; ++l) out[((f + v * VL + l) * HO + y + i) * WO + x + j] = acc[i][j][v][l];
}

}  // namespace

extern "C" void tune_entry(void* const* args) {
  float* output = static_cast<float*>(args[0]);
  const float* image = static_cast<const float*>(args[1]);
  const float* weights = static_cast<const float*>(args[2]);
  // Weights repacked [C][KH][KW][F] (channels innermost, the vector lanes);
  // the image copied into a zero border when there is padding.
  // aligned_alloc wants a multiple of the alignment: whole 16-float lines.
  static float* wp = static_cast<float*>(std::aligned_alloc(64, ((F * C * KH * KW + 15) / 16 * 16) * sizeof(float)));
  for (long f = 0; f < F; ++f)
    for (long c = 0; c < C; ++c)
      for (long r = 0; r < KH * KW; ++r) wp[(c * KH * KW + r) * F + f] = weights[(f * C + c) * KH * KW + r];
  const float* padded = image;
  if (P > 0) {
    static float* copy = static_cast<float*>(std::calloc(B * C * HP * WP + 16, sizeof(float)));
    for (long bc = 0; bc < B * C; ++bc)
      for (long h = 0; h < H; ++h)
        std::memcpy(copy + (bc * HP + h + P) * WP + P, image + (bc * H + h) * W, W * sizeof(float));
    padded = copy;
  }
  constexpr long chunks = B * F0 * Y0 * X0;
  PARALLEL_FOR
  for (long t = 0; t < chunks; ++t) {
    const long b = t / (F0 * Y0 * X0), cf = (t / (Y0 * X0)) % F0 * (F1 * F2 * FR),
               cy = (t / X0) % Y0 * (Y1 * Y2 * YR), cx = t % X0 * (X1 * X2 * XR);
    const float* in = padded + b * C * HP * WP;
    float* out = output + b * F * HO * WO;
    for (long f1 = 0; f1 < F1; ++f1)
      for (long y1 = 0; y1 < Y1; ++y1)
        for (long x1 = 0; x1 < X1; ++x1)
          for (long rc0 = 0; rc0 < RC0; ++rc0)
            for (long ry0 = 0; ry0 < RY0; ++ry0)
              for (long rx0 = 0; rx0 < RX0; ++rx0)
                for (long f2 = 0; f2 < F2; ++f2)
                  for (long y2 = 0; y2 < Y2; ++y2)
                    for (long x2 = 0; x2 < X2; ++x2)
                      tile(in, wp, out, cf + (f1 * F2 + f2) * FR, cy + (y1 * Y2 + y2) * YR, cx + (x1 * X2 + x2) * XR,
                           rc0 * RC1, ry0 * RY1, rx0 * RX1, rc0 == 0 && ry0 == 0 && rx0 == 0);
  }
}
)";

using conv_tiles = conv2d_tiles;

// How many of the inner reduction loops (innermost first: rx, ry, rc) are
// unrolled, and the product of their extents.
std::pair<int, std::int64_t> unrolled_loops(const conv_tiles& t) {
  std::int64_t extents[] = {t.rx[1], t.ry[1], t.rc[1]};
  int count = 0;
  std::int64_t product = 1;
  while (count < 3 && product * extents[count] <= t.max_step) product *= extents[count++];
  return {count, product};
}

std::string reduction_code(const conv_tiles& t) {
  auto [unrolled, product] = unrolled_loops(t);
  const char* vars[] = {"rx", "ry", "c"};
  std::int64_t extents[] = {t.rx[1], t.ry[1], t.rc[1]};
  std::string code;
  // Rolled loops (outermost first) stay loops.
  for (int level = 2; level >= unrolled; --level)
    code += std::string("  for (long ") + vars[level] + " = 0; " + vars[level] + " < " +
            std::to_string(extents[level]) + "; ++" + vars[level] + ")\n";
  auto var_or = [&](int level, std::int64_t value) {
    return level < unrolled ? std::to_string(value) : std::string(vars[level]);
  };
  if (t.explicit_unroll && unrolled > 0) {
    code += "  {\n";
    for (std::int64_t i = 0; i < product; ++i) {
      std::int64_t rx = i % extents[0], ry = i / extents[0] % extents[1], c = i / (extents[0] * extents[1]);
      code += "    step(" + var_or(2, c) + ", " + var_or(1, ry) + ", " + var_or(0, rx) + ");\n";
    }
    return code + "  }\n";
  }
  for (int level = unrolled - 1; level >= 0; --level)
    code += "#pragma GCC unroll " + std::to_string(extents[level]) + "\n  for (long " + vars[level] + " = 0; " +
            vars[level] + " < " + std::to_string(extents[level]) + "; ++" + vars[level] + ")\n";
  return code + "    step(c, ry, rx);\n";
}

std::string conv_source(const task_spec& task, int threads, const conv_tiles& t) {
  std::string s = "// " + task.to_string() + " on the CPU, generated for one configuration\n";
  s += "#include <cstdlib>\n#include <cstring>\n#include <utility>\nnamespace {\n";
  s += constant("B", task.batch) + constant("C", task.in_channels) + constant("H", task.height) +
       constant("W", task.width) + constant("F", task.out_channels) + constant("KH", task.kernel_h) +
       constant("KW", task.kernel_w) + constant("S", task.stride) + constant("P", task.pad) +
       constant("HO", task.out_height()) + constant("WO", task.out_width()) + constant("THREADS", threads);
  const char* f_names[] = {"F0", "F1", "F2", "FR"};
  const char* y_names[] = {"Y0", "Y1", "Y2", "YR"};
  const char* x_names[] = {"X0", "X1", "X2", "XR"};
  for (int i = 0; i < 4; ++i)
    s += constant(f_names[i], t.f[i]) + constant(y_names[i], t.y[i]) + constant(x_names[i], t.x[i]);
  s += constant("RC0", t.rc[0]) + constant("RC1", t.rc[1]) + constant("RY0", t.ry[0]) + constant("RY1", t.ry[1]) +
       constant("RX0", t.rx[0]) + constant("RX1", t.rx[1]) + constant("VL", vector_lanes(t.f[3]));
  s += cpu_vector_helpers;
  std::string body = conv_head;
  auto put = [&](const std::string& what, const std::string& with) {
    body.replace(body.find(what), what.size(), with);
  };
  put("REDUCTION\n", reduction_code(t));
  put("PARALLEL_FOR", threads > 1 ? "#pragma omp parallel for num_threads(THREADS) schedule(static)" : "");
  return s + body;
}

}  // namespace

kernel_program_ptr make_cpu_conv2d_program(const task_spec& task, int threads) {
  auto parameters = conv2d_parameters(task);
  auto program = new_task_program(task, std::move(parameters), "cpu");
  auto space = program->space;
  program->source = [task, threads, space](const configuration& config) {
    return conv_source(task, threads, conv2d_tiles_of(*space, config));
  };
  program->check = [space](const configuration& config) {
    auto t = conv2d_tiles_of(*space, config);
    return cpu_register_tile_problem(
        std::to_string(t.y[3]) + "x" + std::to_string(t.x[3]) + " pixels x " + std::to_string(t.f[3]) + " channels",
        t.y[3] * t.x[3] * (t.f[3] / vector_lanes(t.f[3])), unrolled_loops(t).second);
  };
  program->flags = [threads](const configuration&) { return cpu_template_flags(threads); };
  return program;
}

}  // namespace tune::codegen
