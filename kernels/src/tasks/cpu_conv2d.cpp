// Direct 2D convolution on the CPU, vectorised over output channels with a
// register-blocked micro-kernel and a blocked weight layout (the scheme of
// oneDNN's direct and brgemm convolutions, written for the task's plain
// tensors). Its own search space:
//
//   block_f       output channels of one register tile, a multiple of the
//                 vector width (1-4 vectors): the vector lanes, and the weight
//                 block (weights repacked [F / block_f][reduction][block_f],
//                 oneDNN's Acdb16a / Acdb32a / ... layouts)
//   tile_x        output pixels of one row in a register tile; tile_x *
//                 vectors accumulators stay in registers for the whole
//                 reduction, each input value is broadcast once per tile
//   input_layout  nchw: the image as given (copied into a zero border when
//                 there is padding); nhwc: copied channels-innermost
//   reduction     c_outer: for c, ry, rx; c_inner: for ry, rx, c (the weight
//                 block follows the same order, so weights stream
//                 sequentially either way)
//   loop_order    f_outer: a weight block stays in cache while the tile runs
//                 over the rows of every image (the plain task repacks the
//                 block just before, into a buffer of the thread's); y_outer:
//                 an input row stays while the tile runs over the weight blocks
//   unroll_inner  1: the innermost reduction loop is unrolled, at most
//                 max_inner_unroll (16) times: fully when it is shorter; in
//                 the tiles that read no padding column (where a row has
//                 none, the source is the same as with 0)
//
// The plain task does every conversion (weight repacking, padded or NHWC
// input, the per-tile transpose into the NCHW output, in vector registers)
// inside the timed kernel: it takes and returns the task's plain NCHW / OIHW
// tensors. With own layouts (`conv2d:...:own`) tune_prepare repacks the
// weights and copies the image once, the entry writes a blocked output
// [B][F / FB][HO][WO][FB] with vector stores, and tune_finish converts it
// into NCHW; only the entry is timed, as oneDNN's figure in its own layouts
// leaves its reorders out.
#include <algorithm>
#include <stdexcept>

#include "codegen.hpp"

namespace tune::codegen {

namespace {

const char* conv_body = R"(
constexpr long NV = FB / VL, NFB = F / FB;
constexpr long HP = H + 2 * P, WP = W + 2 * P;
constexpr long STEPS = C * KH * KW;
// Offset of input (c, h, w) in one padded image; the stride between two
// neighbouring output pixels of a row.
constexpr long in_at(long c, long h, long w) { return NHWC ? (h * WP + w) * C + c : (c * HP + h) * WP + w; }
constexpr long XSTEP = NHWC ? S * C : S;
// Position of (c, ry, rx) in the reduction (and the weight block).
constexpr long w_at(long c, long ry, long rx) { return C_INNER ? (ry * KW + rx) * C + c : (c * KH + ry) * KW + rx; }
// Offset of output (b, f, y, x) in NCHW, and where the kernel writes it:
// NCHW, or in its own layout blocked [B][F / FB][HO][WO][FB] (oneDNN's
// nChw16c when FB is 16).
constexpr long nchw_at(long b, long f, long y, long x) { return ((b * F + f) * HO + y) * WO + x; }
constexpr long out_at(long b, long f, long y, long x) {
  return OWN ? (((b * NFB + f / FB) * HO + y) * WO + x) * FB + f % FB : nchw_at(b, f, y, x);
}
// n floats, 64-byte aligned (aligned_alloc wants a multiple of the
// alignment: whole 16-float lines).
float* aligned_floats(long n) { return static_cast<float*>(aligned_alloc(64, (n + 15) / 16 * 16 * sizeof(float))); }

inline void store(float* p, vec v) { __builtin_memcpy(p, &v, sizeof v); }
TRANSPOSE
// NCHW output of COUNT pixels of a tile (acc: their rows): per vector of
// channels, the block of VL pixels x VL channels is transposed in registers
// and each channel's pixels stored as one (partial) vector. One function per
// pixel count, not inlined: the tiles of a row (interior, at the padding, the
// remainder) call the same copy. Inlined into every tile, the transposes took
// a third of a C2 build (one source: 0.69 s, 0.44 s with this; builds of 30
// configurations 0.78x as long, docs/kernels.md); a call per tile at the end
// of its whole reduction: their kernels ran 0.96-1.12x as fast, median 1.01x.
template <long COUNT>
__attribute__((noinline)) void store_group(const vec (*acc)[NV], float* __restrict out) {
#pragma GCC unroll 64
  for (long v = 0; v < NV; ++v) {
    vec r[VL];
#pragma GCC unroll 16
    for (long i = 0; i < VL; ++i) r[i] = i < COUNT ? acc[i][v] : vec{};
    transpose(r);
#pragma GCC unroll 16
    for (long c = 0; c < VL; ++c) __builtin_memcpy(out + (v * VL + c) * HO * WO, &r[c], COUNT * sizeof(float));
  }
}
// Pixels J0 .. J0 + VL - 1 (or to NX) of a tile.
template <long NX, long J0>
__attribute__((always_inline)) inline void store_nchw(vec (&acc)[NX][NV], float* __restrict out) {
  store_group<NX - J0 < VL ? NX - J0 : VL>(acc + J0, out + J0);
}
template <long NX, long... G>
__attribute__((always_inline)) inline void store_nchw(vec (&acc)[NX][NV], float* __restrict out,
                                                      index_list<long, G...>) {
  (store_nchw<NX, G * VL>(acc, out), ...);
}

template <long V>
struct constant {
  static constexpr long value = V;
  constexpr operator long() const { return V; }
};
// The pixels j of a tile starting at output column X0 whose input column
// (X0 + j) * S + RX - P is inside the image: first_inside .. end_inside - 1.
constexpr long first_inside(long x0, long rx) {
  const long n = P - rx - x0 * S;
  return n <= 0 ? 0 : (n + S - 1) / S;
}
constexpr long end_inside(long nx, long x0, long rx) {
  const long m = W - 1 + P - rx - x0 * S;
  return m < 0 ? 0 : (m / S + 1 < nx ? m / S + 1 : nx);
}
// The kernel columns from rx0 on whose pixels inside the image are column
// rx0's: rx0 .. column_run_end(nx, x0, rx0) - 1.
constexpr long column_run_end(long nx, long x0, long rx0) {
  long rx = rx0 + 1;
  while (rx < KW && first_inside(x0, rx) == first_inside(x0, rx0) && end_inside(nx, x0, rx) == end_inside(nx, x0, rx0))
    ++rx;
  return rx;
}
// Calls f(rx0, rx1, j0, j1) for every run of kernel columns rx0 .. rx1 - 1
// of a tile of NX pixels starting at output column X0 whose pixels inside the
// image are the same, j0 .. j1 - 1 (constants): one copy of the reduction's
// body a run rather than one a column (C2's sources compile in 0.95x the
// time; docs/kernels.md).
template <long NX, long X0, long RX0 = 0, class Fn>
__attribute__((always_inline)) inline void for_column_runs(Fn&& f) {
  if constexpr (RX0 < KW) {
    constexpr long RX1 = column_run_end(NX, X0, RX0);
    f(RX0, RX1, constant<first_inside(X0, RX0)>{}, constant<end_inside(NX, X0, RX0)>{});
    for_column_runs<NX, X0, RX1>(f);
  }
}

// NX pixels x FB channels: src points at input (0, y * S, x * S), w at the
// weight block, out at output (b, f, y, x) of the tile's first channel f.
// Only inputs inside the image are multiplied: kernel rows ry0 .. ry1 - 1
// (row_first, row_end), and in a tile that starts at output column X0 >= 0
// (one that reaches into the padding's columns) each kernel column's pixels
// inside the image; X0 < 0 for a tile that does not.
template <long NX, long X0 = -1>
__attribute__((always_inline)) inline void tile(const float* __restrict src, const float* __restrict w,
                                                float* __restrict out, long ry0, long ry1) {
  vec acc[NX][NV];
#pragma GCC unroll 64
  for (long j = 0; j < NX; ++j)
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) acc[j][v] = vec{};
  if constexpr (X0 < 0) {
    auto step = [&](long c, long ry, long rx) __attribute__((always_inline)) {
      rank1<NX, NV, XSTEP>(acc, src + in_at(c, ry, rx), w + w_at(c, ry, rx) * FB);
    };
REDUCTION
  } else {
    auto step = [&](long c, long ry, long rx, auto j0, auto j1) __attribute__((always_inline)) {
      rank1<NX, NV, XSTEP, decltype(j0)::value, decltype(j1)::value>(acc, src + in_at(c, ry, rx),
                                                                       w + w_at(c, ry, rx) * FB);
    };
MASKED_REDUCTION
  }
  if constexpr (OWN) {
    // The tile's pixels are contiguous blocks of FB channels: vector stores.
#pragma GCC unroll 64
    for (long j = 0; j < NX; ++j)
#pragma GCC unroll 64
      for (long v = 0; v < NV; ++v) store(out + j * FB + v * VL, acc[j][v]);
  } else {
    store_nchw(acc, out, indices_below<(NX + VL - 1) / VL>());
  }
}

// Position in the reduction of OIHW's step s = (c * KH + ry) * KW + rx:
// w_at(s / (KH * KW), s / KW % KH, s % KW), with one division (c_inner) or
// none (c_outer: the same order). Written as w_at of the three, it took g++
// 15-35 ms more a build (C2: 0.92x the build time, docs/kernels.md).
constexpr long step_at(long s) { return C_INNER ? s % (KH * KW) * C + s / (KH * KW) : s; }

// Weight block fb repacked into [reduction][FB], VL channels at a time (F
// is a multiple of FB, FB of VL): VL channels x VL steps read as VL vectors
// along the OIHW rows, transposed in registers and stored as one vector of VL
// channels per step. Element by element, each store went to a cache line of
// its own, and for ResNet-18's 512-channel 3x3 convolutions (9.4 MB of
// weights, repacked in every call) the repacking took longer than the
// convolution.
void pack_block(const float* weights, long fb, float* __restrict block) {
  constexpr long WHOLE = STEPS / VL * VL;
  for (long f0 = fb * FB; f0 < (fb + 1) * FB; f0 += VL) {
    const float* rows = weights + f0 * STEPS;
    float* to = block + f0 % FB;
    for (long s0 = 0; s0 < WHOLE; s0 += VL) {
      vec r[VL];
#pragma GCC unroll 16
      for (long i = 0; i < VL; ++i) r[i] = load(rows + i * STEPS + s0);
      transpose(r);
#pragma GCC unroll 16
      for (long j = 0; j < VL; ++j) store(to + step_at(s0 + j) * FB, r[j]);
    }
    for (long s = WHOLE; s < STEPS; ++s)
      for (long i = 0; i < VL; ++i) to[step_at(s) * FB + i] = rows[i * STEPS + s];
  }
}

// All the weights repacked into blocks [F / FB][reduction][FB].
const float* packed_weights(const float* weights) {
  static float* wp = aligned_floats(F * STEPS);
  for (long fb = 0; fb < NFB; ++fb) pack_block(weights, fb, wp + fb * STEPS * FB);
  return wp;
}

// The image as the tiles read it: as given, or copied into a zero border
// and/or channels-innermost.
const float* image_in_layout(const float* image) {
  if constexpr (P > 0 || NHWC) {
    // The border is zero from calloc and never written.
    static float* copy = static_cast<float*>(calloc(B * C * HP * WP + 16, sizeof(float)));
    for (long b = 0; b < B; ++b)
      for (long h = 0; h < H; ++h)
        for (long c = 0; c < C; ++c) {
          const float* row = image + ((b * C + c) * H + h) * W;
          float* to = copy + b * C * HP * WP + in_at(c, h + P, P);
          if constexpr (NHWC) {
            for (long x = 0; x < W; ++x) to[x * C] = row[x];
          } else {
            __builtin_memcpy(to, row, W * sizeof(float));
          }
        }
    return copy;
  } else {
    return image;
  }
}

// The plain task in loop order f_outer repacks one weight block at a time
// into a buffer of the thread's, used for all its rows while it is in cache
// (the block is not written to memory and read back); otherwise the weights
// come repacked whole (the plain task's y_outer, and own layouts, where
// tune_prepare repacks them outside the timed entry).
constexpr bool PACK_PER_BLOCK = !OWN && !Y_OUTER;
long calls = 0;

// Weight block fb in this thread's buffer, repacked when call `call`
// reaches a new block (PACK_PER_BLOCK).
const float* thread_block(const float* weights, long fb, long call) {
  static thread_local float* block = nullptr;
  static thread_local long block_call = 0, block_fb = -1;
  if (!block) block = aligned_floats(STEPS * FB);
  if (block_call != call || block_fb != fb) {
    pack_block(weights, fb, block);
    block_call = call, block_fb = fb;
  }
  return block;
}

// The kernel rows [ry0, ry1) that output row y reads inside the image
// (input rows y * S + ry - P in 0 .. H - 1).
constexpr long row_first(long y) { return P - y * S > 0 ? P - y * S : 0; }
constexpr long row_end(long y) { return H + P - y * S < KH ? H + P - y * S : KH; }

constexpr long XT = WO / XR, XREST = WO % XR;
// Floats between the tiles of neighbouring pixels.
constexpr long XO = out_at(0, 0, 0, 1);
// Whether the pixels x0 .. x1 - 1 read inside the image's columns only; the
// full tiles that do not: 0 .. LEFT - 1 on the left, RIGHT .. XT - 1 on the
// right.
constexpr bool inside(long x0, long x1) { return x0 * S >= P && (x1 - 1) * S + KW - 1 - P < W; }
constexpr bool inside(long xt) { return inside(xt * XR, (xt + 1) * XR); }
constexpr bool REST_INSIDE = inside(XT * XR, WO);
constexpr long left_tiles() {
  long n = 0;
  while (n < XT && !inside(n)) ++n;
  return n;
}
constexpr long LEFT = left_tiles();
constexpr long right_start() {
  long n = XT;
  while (n > LEFT && !inside(n - 1)) --n;
  return n;
}
constexpr long RIGHT = right_start();
// The generator emits the pragma of REDUCTION only where some tile runs it.
static_assert((RIGHT > LEFT || (XREST > 0 && REST_INSIDE)) == SOME_TILE_INSIDE, "the generator's tiles inside");

// Full tiles FIRST + I of a row, each masked at its columns.
template <long FIRST, long... I>
__attribute__((always_inline)) inline void edge_tiles(const float* src, const float* w, float* out, long ry0, long ry1,
                                                      index_list<long, I...>) {
  (tile<XR, (FIRST + I) * XR>(src + (FIRST + I) * XR * XSTEP, w, out + (FIRST + I) * XR * XO, ry0, ry1), ...);
}

// weights: OIHW with PACK_PER_BLOCK, else the blocks of packed_weights.
void convolve(const float* in, const float* weights, float* output) {
  constexpr long chunks = B * NFB * HO;
  const long call = ++calls;
  PARALLEL_FOR
  for (long t = 0; t < chunks; ++t) {
    // f_outer: a weight block's rows of every image, then the next block;
    // y_outer: an image row's weight blocks, then the next row.
    long b, fb, y;
    if constexpr (Y_OUTER) {
      b = t / (HO * NFB), y = t / NFB % HO, fb = t % NFB;
    } else {
      fb = t / (B * HO), b = t / HO % B, y = t % HO;
    }
    const float* src = in + b * C * HP * WP + in_at(0, y * S, 0);
    const float* w = PACK_PER_BLOCK ? thread_block(weights, fb, call) : weights + fb * STEPS * FB;
    float* out = output + out_at(b, fb * FB, y, 0);
    // Without padding every row reads all kernel rows: constants.
    const long ry0 = P > 0 ? row_first(y) : 0, ry1 = P > 0 ? row_end(y) : KH;
    // Tiles 0 .. LEFT - 1 and RIGHT .. XT - 1 reach into the padding's
    // columns, and so may the remainder tile.
    edge_tiles<0>(src, w, out, ry0, ry1, indices_below<LEFT>());
    for (long xt = LEFT; xt < RIGHT; ++xt) tile<XR>(src + xt * XR * XSTEP, w, out + xt * XR * XO, ry0, ry1);
    edge_tiles<RIGHT>(src, w, out, ry0, ry1, indices_below<XT - RIGHT>());
    if constexpr (XREST > 0)
      tile<XREST, REST_INSIDE ? -1 : XT * XR>(src + XT * XR * XSTEP, w, out + XT * XR * XO, ry0, ry1);
  }
}

}  // namespace
)";

// The plain task: every conversion inside the timed entry.
const char* plain_entry = R"(
extern "C" void tune_entry(void* const* args) {
  const float* weights = static_cast<const float*>(args[2]);
  convolve(image_in_layout(static_cast<const float*>(args[1])), PACK_PER_BLOCK ? weights : packed_weights(weights),
           static_cast<float*>(args[0]));
}
)";

// Own layouts: tune_prepare converts the inputs and tune_finish the output
// outside the timed entry.
const char* own_entries = R"(
namespace {
const float* own_image = nullptr;
const float* own_weights = nullptr;
float* own_output = nullptr;
}  // namespace

extern "C" void tune_prepare(void* const* args) {
  own_weights = packed_weights(static_cast<const float*>(args[2]));
  own_image = image_in_layout(static_cast<const float*>(args[1]));
  static float* blocked = aligned_floats(B * F * HO * WO);
  own_output = blocked;
}

extern "C" void tune_entry(void* const*) { convolve(own_image, own_weights, own_output); }

extern "C" void tune_finish(void* const* args) {
  float* output = static_cast<float*>(args[0]);
  for (long b = 0; b < B; ++b)
    for (long f = 0; f < F; ++f)
      for (long y = 0; y < HO; ++y)
        for (long x = 0; x < WO; ++x)
          output[nchw_at(b, f, y, x)] = own_output[out_at(b, f, y, x)];
}
)";

struct conv_knobs {
  std::int64_t block_f = 1, tile_x = 1;
  bool nhwc = false, c_inner = false, y_outer = false, unroll = false;
};

std::string string_value(const search_space& space, const configuration& config, const std::string& name) {
  auto index = space.find(name);
  if (!index) throw std::logic_error("template parameter '" + name + "' missing from its space");
  return std::get<std::string>(space.parameters()[*index]->value(config[*index]));
}

conv_knobs knobs_of(const search_space& space, const configuration& config) {
  conv_knobs k;
  k.block_f = static_cast<std::int64_t>(number_value(space, config, "block_f"));
  k.tile_x = static_cast<std::int64_t>(number_value(space, config, "tile_x"));
  k.nhwc = string_value(space, config, "input_layout") == "nhwc";
  k.c_inner = string_value(space, config, "reduction") == "c_inner";
  k.y_outer = string_value(space, config, "loop_order") == "y_outer";
  k.unroll = number_value(space, config, "unroll_inner") != 0;
  return k;
}

// Extent of the innermost reduction loop.
std::int64_t inner_extent(const task_spec& task, const conv_knobs& k) {
  return k.c_inner ? task.in_channels : task.kernel_w;
}

// Most copies of the reduction's step in an unrolled innermost loop. Until
// 2026-12-02 the loop was unrolled fully: C2's channel loop of 64 steps in
// one run of code took g++ 1.0-1.6 s to build, unrolled 16 times 0.4-0.5 s,
// and the kernels ran 0.91-0.98x as long (the 8 fastest such configurations
// of a bo run, docs/kernels.md). With at most 16 copies an unrolled body
// stays within the bound of cpu_register_tile_problem for every register tile
// the space holds (at most 30 accumulators x 16).
constexpr std::int64_t max_inner_unroll = 16;

// Whether some tile of a row of tiles `tile_x` wide reads no padding column,
// as the template's inside() decides: an interior tile, or a remainder
// inside the image. Only such tiles run REDUCTION, the loop that
// unroll_inner unrolls; the tiles at a row's ends keep their loops rolled.
bool some_tile_inside(const task_spec& task, std::int64_t tile_x) {
  const std::int64_t wo = task.out_width(), rest = wo % tile_x;
  auto inside = [&](std::int64_t x0, std::int64_t x1) {
    return x0 * task.stride >= task.pad && (x1 - 1) * task.stride + task.kernel_w - 1 - task.pad < task.width;
  };
  for (std::int64_t x0 = 0; x0 + tile_x <= wo; x0 += tile_x)
    if (inside(x0, x0 + tile_x)) return true;
  return rest > 0 && inside(wo - rest, wo);
}

// Whether the innermost reduction loop is unrolled somewhere: asked for and
// run by some tile. Where no tile runs it (C2's rows of 27 pixels in tiles of
// 13 or more) unroll_inner changes nothing, and the source is the same as
// without it: the compile cache builds the kernel once.
bool unrolled(const task_spec& task, const conv_knobs& k) { return k.unroll && some_tile_inside(task, k.tile_x); }

// Times the innermost reduction loop is unrolled: 1 when it is not.
std::int64_t inner_unroll(const task_spec& task, const conv_knobs& k) {
  return unrolled(task, k) ? std::min(inner_extent(task, k), max_inner_unroll) : 1;
}

std::string reduction_code(const task_spec& task, const conv_knobs& k) {
  std::string inner = unrolled(task, k) ? "#pragma GCC unroll " + std::to_string(inner_unroll(task, k)) + "\n" : "";
  if (k.c_inner)
    return "  for (long ry = ry0; ry < ry1; ++ry)\n    for (long rx = 0; rx < KW; ++rx)\n" + inner +
           "      for (long c = 0; c < C; ++c) step(c, ry, rx);\n";
  return "  for (long c = 0; c < C; ++c)\n    for (long ry = ry0; ry < ry1; ++ry)\n" + inner +
         "      for (long rx = 0; rx < KW; ++rx) step(c, ry, rx);\n";
}

// The reduction of a tile at the padding's columns: the kernel columns in
// runs of the same pixels inside the image (for_column_runs), each run's
// loop kept rolled so that the run is one copy of the body. A channel loop
// is not unrolled here: the few edge tiles of a row would multiply an
// unrolled body by their runs.
std::string masked_reduction_code(const conv_knobs& k) {
  const std::string runs =
      "for_column_runs<NX, X0>([&](long rx0, long rx1, auto j0, auto j1) __attribute__((always_inline)) {\n"
      "#pragma GCC unroll 1\n";
  if (k.c_inner)
    return "  for (long ry = ry0; ry < ry1; ++ry)\n    " + runs +
           "      for (long rx = rx0; rx < rx1; ++rx)\n        for (long c = 0; c < C; ++c) step(c, ry, rx, j0, j1);\n"
           "    });\n";
  return "  for (long c = 0; c < C; ++c)\n    for (long ry = ry0; ry < ry1; ++ry)\n      " + runs +
         "        for (long rx = rx0; rx < rx1; ++rx) step(c, ry, rx, j0, j1);\n      });\n";
}

std::string conv_source(const task_spec& task, int threads, const conv_knobs& k) {
  std::string s = "// " + task.to_string() + " on the CPU, generated for one configuration\n";
  s += std::string(cpu_kernel_prelude) + "namespace {\n";
  s += constant("B", task.batch) + constant("C", task.in_channels) + constant("H", task.height) +
       constant("W", task.width) + constant("F", task.out_channels) + constant("KH", task.kernel_h) +
       constant("KW", task.kernel_w) + constant("S", task.stride) + constant("P", task.pad) +
       constant("HO", task.out_height()) + constant("WO", task.out_width()) + constant("THREADS", threads);
  s += constant("FB", k.block_f) + constant("XR", k.tile_x) + constant("VL", vector_lanes(k.block_f));
  s += std::string("constexpr bool NHWC = ") + (k.nhwc ? "true" : "false") +
       ", C_INNER = " + (k.c_inner ? "true" : "false") + ", Y_OUTER = " + (k.y_outer ? "true" : "false") +
       ", OWN = " + (task.own_layouts ? "true" : "false") +
       ", SOME_TILE_INSIDE = " + (some_tile_inside(task, k.tile_x) ? "true" : "false") + ";\n";
  s += cpu_vector_helpers;
  std::string body = conv_body;
  auto put = [&](const std::string& what, const std::string& with) {
    body.replace(body.find(what), what.size(), with);
  };
  put("MASKED_REDUCTION\n", masked_reduction_code(k));
  put("REDUCTION\n", reduction_code(task, k));
  put("TRANSPOSE\n", cpu_transpose_code(vector_lanes(k.block_f)));
  put("PARALLEL_FOR", threads > 1 ? "#pragma omp parallel for num_threads(THREADS) schedule(static)" : "");
  return s + body + (task.own_layouts ? own_entries : plain_entry) + cpu_kernel_epilogue;
}

}  // namespace

std::vector<parameter_ptr> cpu_conv2d_parameters(const task_spec& task) {
  // Whole vectors of output channels: 1-4 vectors of the widest width that
  // divides F and fits a register.
  const std::int64_t lanes = vector_lanes(task.out_channels);
  std::vector<double> blocks;
  for (std::int64_t v = 1; v <= 4; ++v)
    if (task.out_channels % (v * lanes) == 0) blocks.push_back(static_cast<double>(v * lanes));
  std::vector<double> widths;
  for (std::int64_t x = 1; x <= std::min<std::int64_t>(task.out_width(), 28); ++x)
    widths.push_back(static_cast<double>(x));
  return {make_discrete_parameter("block_f", blocks),
          make_discrete_parameter("tile_x", widths),
          make_categorical_parameter("input_layout", {parameter_value("nchw"), parameter_value("nhwc")}),
          make_categorical_parameter("reduction", {parameter_value("c_outer"), parameter_value("c_inner")}),
          make_categorical_parameter("loop_order", {parameter_value("f_outer"), parameter_value("y_outer")}),
          make_categorical_parameter("unroll_inner", {parameter_value(0.0), parameter_value(1.0)})};
}

kernel_program_ptr make_cpu_conv2d_program(const task_spec& task, int threads) {
  // Register tiles beyond the register file are outside the space (the
  // strategies never propose them): accumulators + weight vectors + the
  // broadcast input, in lanes (the lanes being those of every block). An
  // unrolled body is within its bound for every such tile (inner_unroll).
  const std::string lanes = std::to_string(vector_lanes(task.out_channels));
  auto program = new_task_program(
      task, cpu_conv2d_parameters(task), "cpu",
      {"tile_x * block_f + block_f + " + lanes + " <= " + std::to_string(vector_registers()) + " * " + lanes});
  auto space = program->space;
  program->source = [task, threads, space](const configuration& config) {
    return conv_source(task, threads, knobs_of(*space, config));
  };
  program->check = [task, space](const configuration& config) -> std::string {
    auto k = knobs_of(*space, config);
    const std::int64_t vectors = k.block_f / vector_lanes(k.block_f), accumulators = k.tile_x * vectors;
    const std::string tile = std::to_string(k.tile_x) + " pixels x " + std::to_string(k.block_f) + " channels";
    // The space's constraints keep the strategies within these bounds; this
    // refuses a configuration given from outside them (a start, --config).
    return cpu_register_tile_problem(tile, accumulators, inner_unroll(task, k));
  };
  program->flags = [threads](const configuration&) { return cpu_template_flags(threads); };
  program->gcc_build_flags = cpu_template_gcc_build_flags();
  if (task.own_layouts) {
    program->prepare = "tune_prepare";
    program->finish = "tune_finish";
  }
  return program;
}

}  // namespace tune::codegen
