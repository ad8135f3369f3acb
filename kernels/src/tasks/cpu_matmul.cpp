// MatMul and BatchMatMul on the CPU. The OpEvo factorizations map onto a
// packed, cache-blocked GEMM with a register-tiled micro-kernel:
//
//   tile_n = (n0, n1, n2, n3)  n0 parallel chunks of rows, n1 cache blocks per
//   tile_m = (m0, m1, m2, m3)  chunk, n2 register tiles per block, n3 rows
//                              (m3 columns, contiguous, vectorised) per register tile
//   tile_k = (k0, k1, k2)      k0 cache blocks of depth k1*k2; the micro-kernel's
//                              k loop is unrolled k2 times
//   tile_b = (b0, b1)          (bmm) b0 parallel chunks of b1 matrices each
//   loop_order                 the nesting of the three cache-block loops (n, m, k);
//                              a packed panel is reused while its block indices stay
//   a_panel, b_panel           packed: the block is copied into panels in the order the
//                              micro-kernel reads them; direct: read in place (b_panel
//                              only when B is not transposed)
//   prefetch                   1: the micro-kernel prefetches its C tile and the next
//                              packed A panel
//
// The micro-kernel is an n3 x m3 register tile of vector accumulators updated by
// rank1() (shared with the Conv2D template) once per k; tiles that need more
// vector registers than the machine has are outside the space.
// Chunks (b0 * n0 * m0 of them) are spread over the device's threads.
#include <stdexcept>

#include "codegen.hpp"

namespace tune::codegen {

namespace {

const char* matmul_body = R"(
constexpr long NV = NR / VL;

inline void store(float* p, vec v) { __builtin_memcpy(p, &v, sizeof v); }
TRANSPOSE
// Where the micro-kernel reads A(i0 + r, k0 + k) and B(k0 + k, j0 + v): a
// packed panel is [BK][MR] (A) or [BK][NR] (B), contiguous in the order the
// micro-kernel reads; a direct one is the operand in place (A: row r of a
// non-transposed A is K floats further, B: only when not transposed).
constexpr long A_K = PACK_A ? MR : (TA ? N : 1), A_R = PACK_A ? 1 : (TA ? 1 : K);
constexpr long B_K = PACK_B ? NR : M;

// A block [BN x BK] as N2 panels of [BK][MR]; B block [BK x BM] as M2 panels
// of [BK][NR]; each reads its operand contiguously.
void pack_a(const float* a, long i0, long k0, float* __restrict ap) {
  for (long p = 0; p < N2; ++p) {
    float* panel = ap + p * BK * MR;
    if constexpr (TA) {
      for (long k = 0; k < BK; ++k)
        for (long r = 0; r < MR; ++r) panel[k * MR + r] = a[(k0 + k) * N + i0 + p * MR + r];
    } else {
      for (long r = 0; r < MR; ++r)
        for (long k = 0; k < BK; ++k) panel[k * MR + r] = a[(i0 + p * MR + r) * K + k0 + k];
    }
  }
}
void pack_b(const float* b, long j0, long k0, float* __restrict bp) {
  for (long q = 0; q < M2; ++q) {
    float* panel = bp + q * BK * NR;
    if constexpr (TB && VL >= 4 && BK % VL == 0) {
      // VL x VL blocks: VL rows of B loaded as vectors, transposed in registers.
      for (long c = 0; c < NR; c += VL)
        for (long k = 0; k < BK; k += VL) {
          vec r[VL];
#pragma GCC unroll 16
          for (long i = 0; i < VL; ++i) r[i] = load(b + (j0 + q * NR + c + i) * K + k0 + k);
          transpose(r);
#pragma GCC unroll 16
          for (long i = 0; i < VL; ++i) store(panel + (k + i) * NR + c, r[i]);
        }
    } else if constexpr (TB) {
      for (long c = 0; c < NR; ++c)
        for (long k = 0; k < BK; ++k) panel[k * NR + c] = b[(j0 + q * NR + c) * K + k0 + k];
    } else {
      for (long k = 0; k < BK; ++k) __builtin_memcpy(panel + k * NR, b + (k0 + k) * M + j0 + q * NR, NR * sizeof(float));
    }
  }
}

// The MR x NR register tile over one k block, added to C (stored when first).
// With PREFETCH the tile's rows of C are fetched at the start, and the next
// packed A panel (`next`) line by line during the k loop.
__attribute__((always_inline)) inline void micro(const float* __restrict ap, const float* __restrict bp,
                                                 float* __restrict c, const float* next, bool first) {
  if constexpr (PREFETCH) {
#pragma GCC unroll 64
    for (long r = 0; r < MR; ++r) __builtin_prefetch(c + r * M, 1, 3);
  }
  vec acc[MR][NV];
#pragma GCC unroll 64
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) acc[r][v] = vec{};
#pragma GCC unroll UNROLL_K
  for (long k = 0; k < BK; ++k) {
    if constexpr (PREFETCH && PACK_A) __builtin_prefetch(next + k * MR, 0, 3);
    rank1<MR, NV, A_R>(acc, ap + k * A_K, bp + k * B_K);
  }
#pragma GCC unroll 64
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) {
      float* to = c + r * M + v * VL;
      store(to, first ? acc[r][v] : acc[r][v] + load(to));
    }
}

}  // namespace

extern "C" void tune_entry(void* const* args) {
  float* C = static_cast<float*>(args[0]);
  const float* A = static_cast<const float*>(args[1]);
  const float* Bm = static_cast<const float*>(args[2]);
  // One packing area per thread, kept for the life of the process.
  constexpr long a_area = PACK_A ? BN * BK : 0, area = (a_area + (PACK_B ? BM * BK : 0) + 15) / 16 * 16 + 16;
  static float* work = static_cast<float*>(aligned_alloc(64, THREADS * area * sizeof(float)));
  constexpr long chunks = B0 * N0 * M0;
  PARALLEL_FOR
  for (long t = 0; t < chunks; ++t) {
    float* ap = work + THREAD_ID * area;
    float* bp = ap + a_area;
    const long cb = t / (N0 * M0), cn = (t / M0) % N0 * CN, cm = t % M0 * CM;
    for (long batch = cb * B1; batch < (cb + 1) * B1; ++batch) {
      const float* a = A + batch * N * K;
      const float* b = Bm + batch * K * M;
      float* c = C + batch * N * M;
      long packed_a_i = -1, packed_a_k = -1, packed_b_j = -1, packed_b_k = -1;
      BLOCK_LOOPS {
        const long i0 = cn + bn * BN, j0 = cm + bm * BM, k0 = bk * BK;
        if (PACK_A && (packed_a_i != i0 || packed_a_k != k0)) {
          pack_a(a, i0, k0, ap);
          packed_a_i = i0;
          packed_a_k = k0;
        }
        if (PACK_B && (packed_b_j != j0 || packed_b_k != k0)) {
          pack_b(b, j0, k0, bp);
          packed_b_j = j0;
          packed_b_k = k0;
        }
        for (long q = 0; q < M2; ++q) {
          const float* bq = PACK_B ? bp + q * BK * NR : b + k0 * M + j0 + q * NR;
          for (long p = 0; p < N2; ++p) {
            const float* apn = PACK_A ? ap + p * BK * MR : a + (TA ? k0 * N + i0 + p * MR : (i0 + p * MR) * K + k0);
            micro(apn, bq, c + (i0 + p * MR) * M + j0 + q * NR, ap + (p + 1) % N2 * BK * MR, bk == 0);
          }
        }
      }
    }
  }
}
)";

void replace_all(std::string& text, const std::string& what, const std::string& with) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
}

struct matmul_tiles {
  std::vector<std::int64_t> b{1, 1}, n, m, k, order;
  bool pack_a = true, pack_b = true, prefetch = false;
};

std::string string_of(const search_space& space, const configuration& config, const std::string& name) {
  auto index = space.find(name);
  if (!index) throw std::logic_error("template parameter '" + name + "' missing from its space");
  return std::get<std::string>(space.parameters()[*index]->value(config[*index]));
}

matmul_tiles tiles_of(const search_space& space, const configuration& config, bool batched) {
  matmul_tiles t;
  if (batched) t.b = tuple_value(space, config, "tile_b");
  t.n = tuple_value(space, config, "tile_n");
  t.m = tuple_value(space, config, "tile_m");
  t.k = tuple_value(space, config, "tile_k");
  t.order = tuple_value(space, config, "loop_order");
  t.pack_a = string_of(space, config, "a_panel") == "packed";
  // A transposed B can only be read through its packed panels.
  if (space.find("b_panel")) t.pack_b = string_of(space, config, "b_panel") == "packed";
  t.prefetch = number_value(space, config, "prefetch") != 0;
  return t;
}

// Why a register tile of `t` does not fit this machine's vector registers
// (its accumulators, one row of B vectors and a broadcast); empty when it does.
std::string register_file_problem(const matmul_tiles& t) {
  const std::int64_t vectors = t.m[3] / vector_lanes(t.m[3]), needed = t.n[3] * vectors + vectors + 1;
  if (needed <= vector_registers()) return {};
  return "register tile " + std::to_string(t.n[3]) + "x" + std::to_string(t.m[3]) + " needs " + std::to_string(needed) +
         " vector registers (" + std::to_string(t.n[3] * vectors) + " accumulators, " + std::to_string(vectors) +
         " of B, a broadcast); this machine has " + std::to_string(vector_registers());
}

std::string matmul_source(const task_spec& task, int threads, const matmul_tiles& t) {
  std::string s = "// " + task.to_string() + " on the CPU, generated for one configuration\n";
  if (threads > 1) s += "#include <omp.h>\n";
  s += cpu_kernel_prelude;
  s += "namespace {\n";
  s += constant("BATCH", task.batch) + constant("N", task.n) + constant("K", task.k) + constant("M", task.m);
  s += std::string("constexpr bool TA = ") + (task.transpose_a ? "true" : "false") +
       ", TB = " + (task.transpose_b ? "true" : "false") + ";\n";
  s += constant("THREADS", threads);
  const char* n_names[] = {"N0", "N1", "N2", "N3"};
  const char* m_names[] = {"M0", "M1", "M2", "M3"};
  for (int i = 0; i < 4; ++i) s += constant(n_names[i], t.n[i]) + constant(m_names[i], t.m[i]);
  s += constant("K0", t.k[0]) + constant("K1", t.k[1]) + constant("K2", t.k[2]);
  s += constant("B0", t.b[0]) + constant("B1", t.b[1]);
  s += std::string("constexpr bool PACK_A = ") + (t.pack_a ? "true" : "false") +
       ", PACK_B = " + (t.pack_b ? "true" : "false") + ", PREFETCH = " + (t.prefetch ? "true" : "false") + ";\n";
  s += "constexpr long MR = N3, NR = M3, BN = N2 * N3, BM = M2 * M3, BK = K1 * K2, CN = N1 * BN, CM = M1 * BM;\n";
  s += constant("VL", vector_lanes(t.m[3]));
  s += cpu_vector_helpers;
  std::string body = matmul_body;
  replace_all(body, "UNROLL_K", std::to_string(t.k[2]));
  replace_all(body, "TRANSPOSE", cpu_transpose_code(vector_lanes(t.m[3])));
  replace_all(body, "PARALLEL_FOR",
              threads > 1 ? "#pragma omp parallel for num_threads(THREADS) schedule(static)" : "");
  replace_all(body, "THREAD_ID", threads > 1 ? "omp_get_thread_num()" : "0");
  // The block loops nest in the configured order: 0 = n, 1 = m, 2 = k.
  const char* loops[] = {"for (long bn = 0; bn < N1; ++bn)", "for (long bm = 0; bm < M1; ++bm)",
                         "for (long bk = 0; bk < K0; ++bk)"};
  std::string nest;
  for (auto level : t.order) nest += std::string(loops[level]) + "\n        ";
  replace_all(body, "BLOCK_LOOPS", nest);
  return s + body + cpu_kernel_epilogue;
}

// The check's bounds as constraints of the space, exact for every tile_m_3:
// a register tile's vectors are vector_lanes(tile_m_3) wide, so there is one
// case per width (the widest of this machine's that divides tile_m_3), each
// with its own count of vectors per row.
std::vector<std::string> matmul_tile_constraints() {
  std::vector<std::int64_t> widths;
  for (std::int64_t lanes : {16, 8, 4, 2})
    if (lanes <= native_vector_lanes()) widths.push_back(lanes);
  widths.push_back(1);
  const std::string registers = std::to_string(vector_registers()), body = std::to_string(max_matmul_body);
  std::string fits, bounded;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const std::string lanes = std::to_string(widths[i]);
    std::string width = "tile_m_3 % " + lanes + " == 0";
    if (i > 0) width += " and tile_m_3 % " + std::to_string(widths[i - 1]) + " != 0";
    const std::string vectors = "(tile_m_3 / " + lanes + ")";
    const std::string sep = i == 0 ? "" : " or ";
    fits += sep + "(" + width + " and tile_n_3 * " + vectors + " + " + vectors + " + 1 <= " + registers + ")";
    bounded += sep + "(" + width + " and tile_n_3 * " + vectors + " * tile_k_2 <= " + body + ")";
  }
  return {fits, bounded};
}

}  // namespace

kernel_program_ptr make_cpu_matmul_program(const task_spec& task, int threads) {
  bool batched = task.op == operator_kind::batch_matmul;
  std::vector<parameter_ptr> parameters;
  if (batched) parameters.push_back(make_factorization_parameter("tile_b", task.batch, 2));
  parameters.push_back(make_factorization_parameter("tile_n", task.n, 4));
  parameters.push_back(make_factorization_parameter("tile_m", task.m, 4));
  parameters.push_back(make_factorization_parameter("tile_k", task.k, 3));
  parameters.push_back(make_permutation_parameter("loop_order", 3));
  const auto packed_or_direct = [] { return std::vector{parameter_value("packed"), parameter_value("direct")}; };
  parameters.push_back(make_categorical_parameter("a_panel", packed_or_direct()));
  if (!task.transpose_b) parameters.push_back(make_categorical_parameter("b_panel", packed_or_direct()));
  parameters.push_back(make_categorical_parameter("prefetch", {parameter_value(0.0), parameter_value(1.0)}));

  // What the check below refuses is outside the space too (the strategies
  // never propose it; a refused trial still took one of the budget's):
  // accumulators + one row of B + a broadcast within the register file, and
  // an unrolled body (accumulators x tile_k_2) within max_matmul_body.
  auto program = new_task_program(task, parameters, "cpu", matmul_tile_constraints());
  auto space = program->space;
  program->source = [task, threads, space, batched](const configuration& config) {
    return matmul_source(task, threads, tiles_of(*space, config, batched));
  };
  program->check = [space, batched](const configuration& config) {
    auto t = tiles_of(*space, config, batched);
    auto problem = cpu_register_tile_problem(std::to_string(t.n[3]) + "x" + std::to_string(t.m[3]),
                                             t.n[3] * (t.m[3] / vector_lanes(t.m[3])), t.k[2], max_matmul_body);
    return problem.empty() ? register_file_problem(t) : problem;
  };
  program->flags = [threads](const configuration&) { return cpu_template_flags(threads); };
  program->gcc_build_flags = cpu_template_gcc_build_flags();
  return program;
}

}  // namespace tune::codegen
