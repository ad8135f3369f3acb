#include "tune/kernels/task.hpp"

#include <stdexcept>

#include "codegen.hpp"
#include "tune/engine/text.hpp"
#include "tune/kernels/cpu_backend.hpp"

namespace tune {

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
  if (task.own_layouts)
    throw std::invalid_argument("task " + task.to_string() +
                                ": own layouts (:own) exist on the cpu backend only; drop ':own' to tune it on " +
                                backend_name);
#ifdef TUNE_WITH_NVRTC
  if (backend_name == "cuda") return make_cuda_task_backend(task, options);
#endif
#ifdef TUNE_WITH_HIP
  if (backend_name == "hip") return make_hip_task_backend(task, options);
#endif
  throw std::invalid_argument("backend '" + backend_name + "' is not available for task " + task.to_string() +
                              "; this build has: " + join(task_backend_names()));
}

backend_ptr make_task_backend(const std::string& task, const std::string& backend_name,
                              const task_backend_options& options) {
  return make_task_backend(parse_task(task), backend_name, options);
}

}  // namespace tune
