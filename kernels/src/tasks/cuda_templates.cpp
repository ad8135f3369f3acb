// The OpEvo GPU templates (TVM's schedules for MatMul, BatchMatMul and
// conv2d_direct) as CUDA source with the configuration baked in. The spaces
// are those of the OpEvo paper, appendix B, with its parameter names:
//
//   MatMul        X = N, Y = M in 4 (blocks, virtual threads, threads, inner),
//                 K in 3 (outer steps, shared-memory tile depth K1*K2 of which
//                 the inner K2 are unrolled)
//   BatchMatMul   + B in 2 (blocks along the batch, matrices per block)
//   Conv2D        tile_f, tile_y, tile_x in 4 as above; tile_rc, tile_ry,
//                 tile_rx in 2 (outer steps, inner loops); auto_unroll_max_step,
//                 unroll_explicit
//
// Only the source is generated here (no CUDA needed); NVRTC compiles it in
// src/cuda/ when the toolkit is there. The same templates are HIP source once
// the HIP runtime header is included first (hip-clang accepts __global__,
// __launch_bounds__, __ldg, __shared__ and the unroll pragmas as written):
// hipcc compiles them in src/hip/.
#include <stdexcept>

#include "codegen.hpp"
#include "tune/kernels/tuned_kernel.hpp"

namespace tune::codegen {

namespace {

constexpr std::int64_t max_threads = 1024;
constexpr std::int64_t max_static_shared = 48 * 1024;
// Per-thread accumulators beyond which the 255-register limit spills anyway.
constexpr std::int64_t max_accumulators = 256;
constexpr std::int64_t max_grid_yz = 65535;

// What differs between the CUDA and the HIP source of one template.
struct gpu_dialect {
  const char* language;  // in the source's first comment
  const char* backend;   // program key and space name
  // Before the configuration's macros, which would otherwise rename names
  // inside the runtime headers (N, K, C, ...).
  const char* prologue;
};
constexpr gpu_dialect cuda_dialect{"CUDA", "cuda", ""};
constexpr gpu_dialect hip_dialect{"HIP", "hip", "#include <hip/hip_runtime.h>\n"};

// Fully unrolled loops over the per-thread tile, which lives in registers.
const char* unrolled_loop_macro = R"(
#define FOR_UNROLLED(i, n) _Pragma("unroll") for (int i = 0; i < (n); ++i)
)";

const char* matmul_kernel = R"(
extern "C" __global__ void __launch_bounds__(X2 * Y2) tune_kernel(float* __restrict__ C, const float* __restrict__ A,
                                                                 const float* __restrict__ B) {
  constexpr int BN = X1 * X2 * X3, BM = Y1 * Y2 * Y3, BK = K1 * K2, T = X2 * Y2;
  __shared__ float As[BK][BN];
  __shared__ float Bs[BK][BM];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * Y2 + tx;
  const long row0 = (long)blockIdx.y * BN, col0 = (long)blockIdx.x * BM;
  for (long batch = (long)blockIdx.z * BATCH1; batch < ((long)blockIdx.z + 1) * BATCH1; ++batch) {
    const float* a = A + batch * N * K;
    const float* b = B + batch * K * M;
    float acc[X1][X3][Y1][Y3];
    FOR_UNROLLED(v, X1)
      FOR_UNROLLED(i, X3)
        FOR_UNROLLED(w, Y1)
          FOR_UNROLLED(j, Y3) acc[v][i][w][j] = 0.0f;
    for (long k0 = 0; k0 < K; k0 += BK) {
      // Consecutive threads read consecutive addresses in either layout.
      for (int e = tid; e < BK * BN; e += T) {
        int kk = TA ? e / BN : e % BK, i = TA ? e % BN : e / BK;
        As[kk][i] = TA ? a[(k0 + kk) * N + row0 + i] : a[(row0 + i) * K + k0 + kk];
      }
      for (int e = tid; e < BK * BM; e += T) {
        int kk = TB ? e % BK : e / BM, j = TB ? e / BK : e % BM;
        Bs[kk][j] = TB ? b[(col0 + j) * K + k0 + kk] : b[(k0 + kk) * M + col0 + j];
      }
      __syncthreads();
#pragma unroll K2
      for (int kk = 0; kk < BK; ++kk) {
        float ar[X1][X3], br[Y1][Y3];
        FOR_UNROLLED(v, X1)
          FOR_UNROLLED(i, X3) ar[v][i] = As[kk][v * X2 * X3 + ty * X3 + i];
        FOR_UNROLLED(w, Y1)
          FOR_UNROLLED(j, Y3) br[w][j] = Bs[kk][w * Y2 * Y3 + tx * Y3 + j];
        FOR_UNROLLED(v, X1)
          FOR_UNROLLED(i, X3)
            FOR_UNROLLED(w, Y1)
              FOR_UNROLLED(j, Y3) acc[v][i][w][j] += ar[v][i] * br[w][j];
      }
      __syncthreads();
    }
    float* c = C + batch * N * M;
    FOR_UNROLLED(v, X1)
      FOR_UNROLLED(i, X3)
        FOR_UNROLLED(w, Y1)
          FOR_UNROLLED(j, Y3)
            c[(row0 + v * X2 * X3 + ty * X3 + i) * M + col0 + w * Y2 * Y3 + tx * Y3 + j] = acc[v][i][w][j];
  }
}
)";

const char* conv_kernel = R"(
extern "C" __global__ void __launch_bounds__(F2 * Y2 * X2) tune_kernel(float* __restrict__ out,
                                                                      const float* __restrict__ in,
                                                                      const float* __restrict__ w) {
  constexpr int BF = F1 * F2 * F3, BY = Y1 * Y2 * Y3, BX = X1 * X2 * X3, T = F2 * Y2 * X2;
  constexpr int WT = BF * RC1 * RY1 * RX1;
  __shared__ float ws[WT];
  const int tx = threadIdx.x, ty = threadIdx.y, tf = threadIdx.z, tid = (tf * Y2 + ty) * X2 + tx;
  const long b = blockIdx.z / F0, f0 = (long)(blockIdx.z % F0) * BF;
  const long y0 = (long)blockIdx.y * BY, x0 = (long)blockIdx.x * BX;
  float acc[F1][F3][Y1][Y3][X1][X3];
  FOR_UNROLLED(a, F1 * F3 * Y1 * Y3 * X1 * X3) (&acc[0][0][0][0][0][0])[a] = 0.0f;
  for (int rc0 = 0; rc0 < RC0; ++rc0)
    for (int ry0 = 0; ry0 < RY0; ++ry0)
      for (int rx0 = 0; rx0 < RX0; ++rx0) {
        for (int e = tid; e < WT; e += T) {
          int rx = e % RX1, ry = e / RX1 % RY1, c = e / (RX1 * RY1) % RC1, f = e / (RX1 * RY1 * RC1);
          ws[e] = w[(((f0 + f) * C + rc0 * RC1 + c) * KH + ry0 * RY1 + ry) * KW + rx0 * RX1 + rx];
        }
        __syncthreads();
UNROLL_C
        for (int c = 0; c < RC1; ++c)
UNROLL_Y
          for (int ry = 0; ry < RY1; ++ry)
UNROLL_X
            for (int rx = 0; rx < RX1; ++rx) {
              const long ci = rc0 * RC1 + c, kh = ry0 * RY1 + ry, kw = rx0 * RX1 + rx;
              FOR_UNROLLED(v, Y1)
                FOR_UNROLLED(i, Y3) {
                  const long h = (y0 + v * Y2 * Y3 + ty * Y3 + i) * S + kh - P;
                  FOR_UNROLLED(u, X1)
                    FOR_UNROLLED(j, X3) {
                      const long col = (x0 + u * X2 * X3 + tx * X3 + j) * S + kw - P;
                      const float x = (h >= 0 && h < H && col >= 0 && col < W) ? __ldg(in + ((b * C + ci) * H + h) * W + col) : 0.0f;
                      FOR_UNROLLED(g, F1)
                        FOR_UNROLLED(k, F3)
                          acc[g][k][v][i][u][j] += x * ws[(((g * F2 + tf) * F3 + k) * RC1 + c) * RY1 * RX1 + ry * RX1 + rx];
                    }
                }
            }
        __syncthreads();
      }
  FOR_UNROLLED(g, F1)
    FOR_UNROLLED(k, F3)
      FOR_UNROLLED(v, Y1)
        FOR_UNROLLED(i, Y3)
          FOR_UNROLLED(u, X1)
            FOR_UNROLLED(j, X3)
              out[((b * F + f0 + (g * F2 + tf) * F3 + k) * HO + y0 + v * Y2 * Y3 + ty * Y3 + i) * WO + x0 + u * X2 * X3 +
                  tx * X3 + j] = acc[g][k][v][i][u][j];
}
)";

// Macros rather than constexpr variables: they also size the shared arrays
// and the #pragma unroll counts, and need no standard-library header.
std::string device_constant(const std::string& name, std::int64_t value) {
  return "#define " + name + " " + std::to_string(value) + "L\n";
}

struct gpu_matmul_tiles {
  std::vector<std::int64_t> b{1, 1}, x, y, k;
};

gpu_matmul_tiles gpu_tiles_of(const search_space& space, const configuration& config, bool batched) {
  gpu_matmul_tiles t;
  if (batched) t.b = tuple_value(space, config, "B");
  t.x = tuple_value(space, config, "X");
  t.y = tuple_value(space, config, "Y");
  t.k = tuple_value(space, config, "K");
  return t;
}

std::string limits_problem(std::int64_t threads, std::int64_t shared_bytes, std::int64_t accumulators,
                           std::int64_t grid_y, std::int64_t grid_z) {
  if (threads > max_threads)
    return std::to_string(threads) + " threads per block; at most " + std::to_string(max_threads);
  if (shared_bytes > max_static_shared)
    return std::to_string(shared_bytes) + " bytes of shared memory; at most " + std::to_string(max_static_shared);
  if (accumulators > max_accumulators)
    return std::to_string(accumulators) + " accumulators per thread; at most " + std::to_string(max_accumulators) +
           " fit in registers";
  if (grid_y > max_grid_yz || grid_z > max_grid_yz)
    return "grid of " + std::to_string(grid_y) + " x " + std::to_string(grid_z) + " blocks in y, z; at most " +
           std::to_string(max_grid_yz);
  return {};
}

// What limits_problem refuses, as constraints of the space over the same
// products (the strategies never propose it; on an H200 a refused trial took
// one of the budget's, 183-266 of 300 in the MatMuls' runs).
std::vector<std::string> limit_constraints(const std::string& threads, const std::string& shared_bytes,
                                           const std::string& accumulators, const std::vector<std::string>& grid_yz,
                                           std::vector<std::string> limits = {}) {
  limits.push_back(threads + " <= " + std::to_string(max_threads));
  limits.push_back(shared_bytes + " <= " + std::to_string(max_static_shared));
  limits.push_back(accumulators + " <= " + std::to_string(max_accumulators));
  for (const auto& extent : grid_yz) limits.push_back(extent + " <= " + std::to_string(max_grid_yz));
  return limits;
}

std::shared_ptr<kernel_program> gpu_matmul_program(const task_spec& task, const gpu_dialect& dialect) {
  bool batched = task.op == operator_kind::batch_matmul;
  std::vector<parameter_ptr> parameters;
  if (batched) parameters.push_back(make_factorization_parameter("B", task.batch, 2));
  parameters.push_back(make_factorization_parameter("K", task.k, 3));
  parameters.push_back(make_factorization_parameter("X", task.n, 4));
  parameters.push_back(make_factorization_parameter("Y", task.m, 4));
  std::vector<std::string> grid_yz{"X_0"};
  if (batched) grid_yz.push_back("B_0");
  auto program = new_task_program(task, std::move(parameters), dialect.backend,
                                  limit_constraints("X_2 * Y_2", "(X_1 * X_2 * X_3 + Y_1 * Y_2 * Y_3) * K_1 * K_2 * 4",
                                                    "X_1 * X_3 * Y_1 * Y_3", grid_yz));
  program->gpu_language = dialect.backend;
  auto space = program->space;
  program->source = [task, space, batched, dialect](const configuration& config) {
    auto t = gpu_tiles_of(*space, config, batched);
    std::string s = "// " + task.to_string() + " for " + dialect.language + ", generated for one configuration\n";
    s += dialect.prologue;
    s += device_constant("N", task.n) + device_constant("K", task.k) + device_constant("M", task.m) +
         device_constant("TA", task.transpose_a) + device_constant("TB", task.transpose_b) +
         device_constant("BATCH1", t.b[1]);
    const char* xs[] = {"X0", "X1", "X2", "X3"};
    const char* ys[] = {"Y0", "Y1", "Y2", "Y3"};
    for (int i = 0; i < 4; ++i) s += device_constant(xs[i], t.x[i]) + device_constant(ys[i], t.y[i]);
    s += device_constant("K1", t.k[1]) + device_constant("K2", t.k[2]);
    std::string body = std::string(unrolled_loop_macro) + matmul_kernel;
    body.replace(body.find("#pragma unroll K2"), 17, "#pragma unroll " + std::to_string(t.k[2]));
    return s + body;
  };
  program->geometry = [space, batched](const configuration& config) {
    auto t = gpu_tiles_of(*space, config, batched);
    launch_geometry g;
    g.grid[0] = static_cast<unsigned>(t.y[0]);
    g.grid[1] = static_cast<unsigned>(t.x[0]);
    g.grid[2] = static_cast<unsigned>(t.b[0]);
    g.block[0] = static_cast<unsigned>(t.y[2]);
    g.block[1] = static_cast<unsigned>(t.x[2]);
    g.shared_bytes = static_cast<unsigned>((t.x[1] * t.x[2] * t.x[3] + t.y[1] * t.y[2] * t.y[3]) * t.k[1] * t.k[2] * 4);
    return g;
  };
  program->check = [space, batched](const configuration& config) {
    auto t = gpu_tiles_of(*space, config, batched);
    return limits_problem(t.x[2] * t.y[2], (t.x[1] * t.x[2] * t.x[3] + t.y[1] * t.y[2] * t.y[3]) * t.k[1] * t.k[2] * 4,
                          t.x[1] * t.x[3] * t.y[1] * t.y[3], t.x[0], t.b[0]);
  };
  return program;
}

std::string unroll_pragma(bool unrolled, bool explicit_unroll) {
  if (!unrolled) return "#pragma unroll 1";
  return explicit_unroll ? "#pragma unroll" : "";
}

std::shared_ptr<kernel_program> gpu_conv2d_program(const task_spec& task, const gpu_dialect& dialect) {
  auto program =
      new_task_program(task, conv2d_parameters(task), dialect.backend,
                       limit_constraints("tile_f_2 * tile_y_2 * tile_x_2",
                                         "tile_f_1 * tile_f_2 * tile_f_3 * tile_rc_1 * tile_ry_1 * tile_rx_1 * 4",
                                         "tile_f_1 * tile_f_3 * tile_y_1 * tile_y_3 * tile_x_1 * tile_x_3",
                                         {"tile_y_0", std::to_string(task.batch) + " * tile_f_0"}, {"tile_f_2 <= 64"}));
  program->gpu_language = dialect.backend;
  auto space = program->space;
  program->source = [task, space, dialect](const configuration& config) {
    auto t = conv2d_tiles_of(*space, config);
    std::string s = "// " + task.to_string() + " for " + dialect.language + ", generated for one configuration\n";
    s += dialect.prologue;
    s += device_constant("C", task.in_channels) + device_constant("H", task.height) + device_constant("W", task.width) +
         device_constant("F", task.out_channels) + device_constant("KH", task.kernel_h) +
         device_constant("KW", task.kernel_w) + device_constant("S", task.stride) + device_constant("P", task.pad) +
         device_constant("HO", task.out_height()) + device_constant("WO", task.out_width());
    const char* fs[] = {"F0", "F1", "F2", "F3"};
    const char* ys[] = {"Y0", "Y1", "Y2", "Y3"};
    const char* xs[] = {"X0", "X1", "X2", "X3"};
    for (int i = 0; i < 4; ++i)
      s += device_constant(fs[i], t.f[i]) + device_constant(ys[i], t.y[i]) + device_constant(xs[i], t.x[i]);
    s += device_constant("RC0", t.rc[0]) + device_constant("RC1", t.rc[1]) + device_constant("RY0", t.ry[0]) +
         device_constant("RY1", t.ry[1]) + device_constant("RX0", t.rx[0]) + device_constant("RX1", t.rx[1]);
    // The innermost reduction loops are unrolled while their extents'
    // product stays within auto_unroll_max_step.
    std::int64_t product = 1;
    bool unroll_x = (product *= t.rx[1]) <= t.max_step;
    bool unroll_y = unroll_x && (product *= t.ry[1]) <= t.max_step;
    bool unroll_c = unroll_y && (product *= t.rc[1]) <= t.max_step;
    std::string body = std::string(unrolled_loop_macro) + conv_kernel;
    auto put = [&](const std::string& what, const std::string& with) {
      body.replace(body.find(what), what.size(), with);
    };
    put("UNROLL_C", unroll_pragma(unroll_c, t.explicit_unroll));
    put("UNROLL_Y", unroll_pragma(unroll_y, t.explicit_unroll));
    put("UNROLL_X", unroll_pragma(unroll_x, t.explicit_unroll));
    return s + body;
  };
  auto batch = task.batch;
  program->geometry = [space, batch](const configuration& config) {
    auto t = conv2d_tiles_of(*space, config);
    launch_geometry g;
    g.grid[0] = static_cast<unsigned>(t.x[0]);
    g.grid[1] = static_cast<unsigned>(t.y[0]);
    g.grid[2] = static_cast<unsigned>(batch * t.f[0]);
    g.block[0] = static_cast<unsigned>(t.x[2]);
    g.block[1] = static_cast<unsigned>(t.y[2]);
    g.block[2] = static_cast<unsigned>(t.f[2]);
    g.shared_bytes = static_cast<unsigned>(t.f[1] * t.f[2] * t.f[3] * t.rc[1] * t.ry[1] * t.rx[1] * 4);
    return g;
  };
  program->check = [space, batch](const configuration& config) {
    auto t = conv2d_tiles_of(*space, config);
    if (t.f[2] > 64) return std::string("tile_f threads ") + std::to_string(t.f[2]) + " exceed blockDim.z limit 64";
    return limits_problem(t.f[2] * t.y[2] * t.x[2], t.f[1] * t.f[2] * t.f[3] * t.rc[1] * t.ry[1] * t.rx[1] * 4,
                          t.f[1] * t.f[3] * t.y[1] * t.y[3] * t.x[1] * t.x[3], t.y[0], batch * t.f[0]);
  };
  return program;
}

kernel_program_ptr make_gpu_program(const task_spec& task, const gpu_dialect& dialect) {
  auto program =
      task.op == operator_kind::conv2d ? gpu_conv2d_program(task, dialect) : gpu_matmul_program(task, dialect);
  program->entry = "tune_kernel";
  return program;
}

}  // namespace

kernel_program_ptr make_cuda_program(const task_spec& task) { return make_gpu_program(task, cuda_dialect); }

kernel_program_ptr make_hip_program(const task_spec& task) { return make_gpu_program(task, hip_dialect); }

}  // namespace tune::codegen

namespace tune {

kernel_program_ptr make_gpu_task_program(const task_spec& task, const std::string& backend) {
  if (backend == "cuda") return codegen::make_cuda_program(task);
  if (backend == "hip") return codegen::make_hip_program(task);
  throw std::invalid_argument("backend '" + backend + "' has no GPU kernel program; use cuda or hip");
}

}  // namespace tune
