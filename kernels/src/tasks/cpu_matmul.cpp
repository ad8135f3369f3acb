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
//
// Chunks (b0 * n0 * m0 of them) are spread over the device's threads.
#include <stdexcept>

#include "codegen.hpp"

namespace tune::codegen {

namespace {

const char* matmul_body = R"(
constexpr long NV = NR / VL;

inline void store(float* p, vec v) { std::memcpy(p, &v, sizeof v); }
inline float a_at(const float* a, long i, long k) { return TA ? a[k * N + i] : a[i * K + k]; }
inline float b_at(const float* b, long k, long j) { return TB ? b[j * K + k] : b[k * M + j]; }

// A block [BN x BK] as N2 panels of [BK][MR]; B block [BK x BM] as M2 panels of [BK][NR].
void pack_a(const float* a, long i0, long k0, float* __restrict ap) {
  for (long p = 0; p < N2; ++p)
    for (long k = 0; k < BK; ++k)
      for (long r = 0; r < MR; ++r) ap[(p * BK + k) * MR + r] = a_at(a, i0 + p * MR + r, k0 + k);
}
void pack_b(const float* b, long j0, long k0, float* __restrict bp) {
  for (long q = 0; q < M2; ++q)
    for (long k = 0; k < BK; ++k)
      for (long c = 0; c < NR; ++c) bp[(q * BK + k) * NR + c] = b_at(b, k0 + k, j0 + q * NR + c);
}

__attribute__((always_inline)) inline void micro(const float* __restrict ap, const float* __restrict bp,
                                                 float* __restrict c, bool first) {
  vec acc[MR][NV];
#pragma GCC unroll 64
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) acc[r][v] = first ? vec{} : load(c + r * M + v * VL);
#pragma GCC unroll UNROLL_K
  for (long k = 0; k < BK; ++k) {
    vec bv[NV];
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) bv[v] = load(bp + k * NR + v * VL);
#pragma GCC unroll 64
    for (long r = 0; r < MR; ++r) {
      vec a = splat(ap[k * MR + r]);
#pragma GCC unroll 64
      for (long v = 0; v < NV; ++v) acc[r][v] += a * bv[v];
    }
  }
#pragma GCC unroll 64
  for (long r = 0; r < MR; ++r)
#pragma GCC unroll 64
    for (long v = 0; v < NV; ++v) store(c + r * M + v * VL, acc[r][v]);
}

}  // namespace

extern "C" void tune_entry(void* const* args) {
  float* C = static_cast<float*>(args[0]);
  const float* A = static_cast<const float*>(args[1]);
  const float* Bm = static_cast<const float*>(args[2]);
  // One packing area per thread, kept for the life of the process.
  constexpr long area = ((BN * BK + BM * BK) + 15) / 16 * 16;
  static float* work = static_cast<float*>(std::aligned_alloc(64, THREADS * area * sizeof(float)));
  constexpr long chunks = B0 * N0 * M0;
  PARALLEL_FOR
  for (long t = 0; t < chunks; ++t) {
    float* ap = work + THREAD_ID * area;
    float* bp = ap + BN * BK;
    const long cb = t / (N0 * M0), cn = (t / M0) % N0 * CN, cm = t % M0 * CM;
    for (long batch = cb * B1; batch < (cb + 1) * B1; ++batch) {
      const float* a = A + batch * N * K;
      const float* b = Bm + batch * K * M;
      float* c = C + batch * N * M;
      long packed_a_i = -1, packed_a_k = -1, packed_b_j = -1, packed_b_k = -1;
      BLOCK_LOOPS {
        const long i0 = cn + bn * BN, j0 = cm + bm * BM, k0 = bk * BK;
        if (packed_a_i != i0 || packed_a_k != k0) {
          pack_a(a, i0, k0, ap);
          packed_a_i = i0;
          packed_a_k = k0;
        }
        if (packed_b_j != j0 || packed_b_k != k0) {
          pack_b(b, j0, k0, bp);
          packed_b_j = j0;
          packed_b_k = k0;
        }
        for (long q = 0; q < M2; ++q)
          for (long p = 0; p < N2; ++p)
            micro(ap + p * BK * MR, bp + q * BK * NR, c + (i0 + p * MR) * M + j0 + q * NR, bk == 0);
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
};

matmul_tiles tiles_of(const search_space& space, const configuration& config, bool batched) {
  matmul_tiles t;
  if (batched) t.b = tuple_value(space, config, "tile_b");
  t.n = tuple_value(space, config, "tile_n");
  t.m = tuple_value(space, config, "tile_m");
  t.k = tuple_value(space, config, "tile_k");
  t.order = tuple_value(space, config, "loop_order");
  return t;
}

std::string matmul_source(const task_spec& task, int threads, const matmul_tiles& t) {
  std::string s = "// " + task.to_string() + " on the CPU, generated for one configuration\n";
  s += "#include <cstdlib>\n#include <cstring>\n#include <utility>\n";
  if (threads > 1) s += "#include <omp.h>\n";
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
  s += "constexpr long MR = N3, NR = M3, BN = N2 * N3, BM = M2 * M3, BK = K1 * K2, CN = N1 * BN, CM = M1 * BM;\n";
  s += constant("VL", vector_lanes(t.m[3]));
  s += cpu_vector_helpers;
  std::string body = matmul_body;
  replace_all(body, "UNROLL_K", std::to_string(t.k[2]));
  replace_all(body, "PARALLEL_FOR",
              threads > 1 ? "#pragma omp parallel for num_threads(THREADS) schedule(static)" : "");
  replace_all(body, "THREAD_ID", threads > 1 ? "omp_get_thread_num()" : "0");
  // The block loops nest in the configured order: 0 = n, 1 = m, 2 = k.
  const char* loops[] = {"for (long bn = 0; bn < N1; ++bn)", "for (long bm = 0; bm < M1; ++bm)",
                         "for (long bk = 0; bk < K0; ++bk)"};
  std::string nest;
  for (auto level : t.order) nest += std::string(loops[level]) + "\n        ";
  replace_all(body, "BLOCK_LOOPS", nest);
  return s + body;
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

  auto program = new_task_program(task, std::move(parameters), "cpu");
  auto space = program->space;
  program->source = [task, threads, space, batched](const configuration& config) {
    return matmul_source(task, threads, tiles_of(*space, config, batched));
  };
  program->check = [space, batched](const configuration& config) {
    auto t = tiles_of(*space, config, batched);
    return cpu_register_tile_problem(std::to_string(t.n[3]) + "x" + std::to_string(t.m[3]),
                                     t.n[3] * (t.m[3] / vector_lanes(t.m[3])), t.k[2]);
  };
  program->flags = [threads](const configuration&) { return cpu_template_flags(threads); };
  return program;
}

}  // namespace tune::codegen
