#include "tune/kernels/tuned_kernel.hpp"

#include <charconv>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "codegen.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/task.hpp"

namespace tune {

namespace {

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// The declaration of run() and the args array its body hands to the entry.
struct run_signature {
  std::string parameters;
  std::string args;
};

run_signature signature_of(const std::vector<kernel_argument>& arguments) {
  std::vector<std::string> parameters, args;
  for (const auto& a : arguments) {
    std::string type = to_string(a.type);
    if (is_array(a.type)) {
      parameters.push_back((a.output ? "" : "const ") + type + " " + a.name);
      args.push_back(a.output ? a.name : "const_cast<" + type + ">(" + a.name + ")");
    } else {
      parameters.push_back(type + " " + a.name);
      args.push_back("const_cast<" + type + "*>(&" + a.name + ")");
    }
  }
  return {joined(parameters, ", "), joined(args, ", ")};
}

// The generated entry becomes `symbol`, so several tuned kernels link into one program.
std::string renamed_entry(std::string source, const std::string& entry, const std::string& symbol) {
  const std::string from = "extern \"C\" void " + entry + "(";
  auto at = source.find(from);
  if (at == std::string::npos || source.find(from, at + 1) != std::string::npos)
    throw std::logic_error("generated source does not define its entry " + entry + " exactly once");
  return source.replace(at, from.size(), "extern \"C\" void " + symbol + "(");
}

// The shortest text that reads back as the same double.
std::string number_text(double value) {
  char text[32];
  auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

// The configuration of `info`, checked against the program (each message says
// what to do).
configuration checked_configuration(const kernel_program& program, const tuned_kernel_info& info) {
  if (!codegen::is_identifier(info.name))
    throw std::invalid_argument("kernel name '" + info.name +
                                "' is not a C identifier; use letters, digits and '_', e.g. mm_512");
  if (info.task.find_first_of("\"\\\n") != std::string::npos)
    throw std::invalid_argument("task '" + info.task + "' holds a quote, backslash or line break; give a task string");
  const auto& space = *program.space;
  configuration config;
  try {
    config = space.from_json(info.config_json);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + "; the configuration does not belong to " + program.key +
                                ": emit the task it was tuned for");
  }
  if (!space.is_valid(config))
    throw std::invalid_argument("configuration " + info.config_json + " breaks a constraint of " + program.key);
  if (program.check) {
    if (auto problem = program.check(config); !problem.empty())
      throw std::invalid_argument("configuration " + info.config_json + " cannot be instantiated: " + problem);
  }
  return config;
}

}  // namespace

tuned_kernel_files emit_tuned_kernel(const kernel_program& program, const tuned_kernel_info& info,
                                     const std::string& header_include) {
  const auto& space = *program.space;
  const configuration config = checked_configuration(program, info);

  if (!program.prepare.empty() || !program.finish.empty())
    throw std::invalid_argument("task '" + info.task +
                                "' keeps its tensors in its own layouts between runs and cannot be emitted as one "
                                "call; emit the plain task (without ':own'), whose space is the same");
  tuned_kernel_files files;
  files.flags = cpu_kernel_flags(program, config);
  const std::string symbol = "tune_engine_" + info.name;
  const auto run = signature_of(program.arguments);

  std::string& h = files.header;
  h += "// " + info.name + ": " + info.task + " tuned by tune-engine; generated, do not edit.\n";
  std::string provenance = info.provenance;
  for (auto& c : provenance)
    if (c == '\n') c = ' ';
  h += "// " + provenance + "\n";
  h += std::string(tuned_kernel_flags_prefix) + joined(files.flags, " ") + "\n";
  h += "#pragma once\n\nnamespace " + info.name + " {\n\n";
  h += "constexpr const char task[] = \"" + info.task + "\";\n";
  h += "constexpr const char configuration_json[] = R\"tune(" + info.config_json + ")tune\";\n";
  h += "/// Median kernel time measured while tuning, in ms.\n";
  h += "constexpr double tuned_time_ms = " + number_text(info.time_ms) + ";\n";
  h += "/// Floating-point operations of one run().\n";
  h += "constexpr double flops = " + number_text(program.flops) + ";\n\n";
  h += codegen::configuration_constants(space, config, true) + "\n";
  h += "// elements of each argument\n";
  for (const auto& a : program.arguments)
    if (is_array(a.type)) h += codegen::constant(a.name + "_elements", a.size);
  h += "\n/// Runs the tuned kernel";
  if (!program.arguments.empty() && program.arguments.front().output)
    h += " (" + program.arguments.front().name + " is the output)";
  h += ".\n/// Not re-entrant: the kernel keeps working buffers of its own between\n"
       "/// calls (allocated at the first); callers on several threads must take turns.\n";
  h += "void run(" + run.parameters + ");\n\n}  // namespace " + info.name + "\n\n";
  h += "#ifdef TUNE_ENGINE_IMPLEMENT_" + info.name + "\n";
  h += renamed_entry(program.source(config), program.entry, symbol);
  h += "\nvoid " + info.name + "::run(" + run.parameters + ") {\n";
  h += "  void* const args[] = {" + run.args + "};\n";
  h += "  " + symbol + "(args);\n}\n#endif\n";

  files.source = "// The tuned kernel " + info.name + " (" + info.task +
                 "), compiled with: " + joined(files.flags, " ") + "\n#define TUNE_ENGINE_IMPLEMENT_" + info.name +
                 "\n#include \"" + header_include + "\"\n";
  return files;
}

}  // namespace tune

namespace tune {

tuned_gpu_kernel emit_tuned_gpu_kernel(const kernel_program& program, const tuned_kernel_info& info) {
  if (!program.geometry)
    throw std::invalid_argument("task '" + info.task + "' (" + program.key +
                                ") is not a GPU kernel; emit it as a C++ header with --backend cpu");
  const configuration config = checked_configuration(program, info);
  const task_spec task = parse_task(info.task);
  const auto geometry = program.geometry(config);

  nlohmann::json shape;
  std::string op;
  if (task.op == operator_kind::conv2d) {
    op = "conv2d";
    shape = {{"batch", task.batch},
             {"in_channels", task.in_channels},
             {"height", task.height},
             {"width", task.width},
             {"out_channels", task.out_channels},
             {"kernel_h", task.kernel_h},
             {"kernel_w", task.kernel_w},
             {"stride", task.stride},
             {"pad", task.pad},
             {"out_height", task.out_height()},
             {"out_width", task.out_width()}};
  } else {
    op = task.op == operator_kind::matmul ? "matmul" : "bmm";
    shape = {{"batch", task.batch},
             {"n", task.n},
             {"k", task.k},
             {"m", task.m},
             {"transpose_a", task.transpose_a},
             {"transpose_b", task.transpose_b}};
  }
  nlohmann::json arguments = nlohmann::json::array();
  for (const auto& a : program.arguments) {
    nlohmann::json argument = {{"name", a.name}, {"type", to_string(a.type)}, {"output", a.output}};
    if (is_array(a.type))
      argument["elements"] = a.size;
    else
      argument["value"] = a.value;
    arguments.push_back(std::move(argument));
  }
  std::string provenance = info.provenance;
  for (auto& c : provenance)
    if (c == '\n') c = ' ';

  tuned_gpu_kernel out;
  out.source = "// " + info.name + ": " + info.task + " tuned by tune-engine; generated, do not edit.\n// " +
               provenance + "\n" + program.source(config);
  nlohmann::json launch = {{"name", info.name},
                           {"task", info.task},
                           {"program", program.key},
                           {"operator", op},
                           {"shape", std::move(shape)},
                           {"entry", program.entry},
                           {"grid", {geometry.grid[0], geometry.grid[1], geometry.grid[2]}},
                           {"block", {geometry.block[0], geometry.block[1], geometry.block[2]}},
                           {"shared_bytes", geometry.shared_bytes},
                           {"arguments", std::move(arguments)},
                           {"flops", program.flops},
                           {"configuration", nlohmann::json::parse(info.config_json)},
                           {"time_ms", info.time_ms},
                           {"provenance", provenance}};
  out.launch_json = launch.dump(2) + "\n";
  return out;
}

}  // namespace tune
