#include "tune/kernels/user_kernel.hpp"

#include <array>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "codegen.hpp"
#include "tune/engine/readers.hpp"
#include "tune/kernels/compile_cache.hpp"
#include "tune/kernels/cpu_backend.hpp"
#include "tune/kernels/cuda_backend.hpp"
#include "tune/kernels/hip_backend.hpp"

namespace tune {

namespace fs = std::filesystem;

namespace codegen {

bool is_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

namespace {
bool integral(double number) { return number == std::floor(number) && std::fabs(number) < 9e18; }
}  // namespace

std::string configuration_defines(const search_space& space, const configuration& config) {
  std::string out = "// configuration\n";
  for (const auto& [name, value] : space.values(config)) {
    if (auto* number = std::get_if<double>(&value)) {
      out += "#define " + name + " " +
             (integral(*number) ? std::to_string(static_cast<std::int64_t>(*number)) : tune::to_string(value)) + "\n";
    } else if (auto* text = std::get_if<std::string>(&value)) {
      out += "#define " + name + " " + *text + "\n";
    } else {
      const auto& tuple = std::get<std::vector<std::int64_t>>(value);
      for (std::size_t i = 0; i < tuple.size(); ++i)
        out += "#define " + name + "_" + std::to_string(i) + " " + std::to_string(tuple[i]) + "\n";
    }
  }
  return out;
}

std::string configuration_constants(const search_space& space, const configuration& config, bool with_arrays) {
  std::string out = "// configuration\n";
  for (const auto& [name, value] : space.values(config)) {
    if (auto* number = std::get_if<double>(&value)) {
      if (integral(*number))
        out += codegen::constant(name, static_cast<std::int64_t>(*number));
      else
        out += "constexpr double " + name + " = " + tune::to_string(value) + ";\n";
    } else if (std::holds_alternative<std::string>(value)) {
      out += "constexpr const char* " + name + " = " + tune::to_string(value) + ";\n";
    } else {
      const auto& tuple = std::get<std::vector<std::int64_t>>(value);
      std::string list;
      for (std::size_t i = 0; i < tuple.size(); ++i) {
        list += (i ? ", " : "") + std::to_string(tuple[i]);
        out += codegen::constant(name + "_" + std::to_string(i), tuple[i]);
      }
      if (with_arrays) out += "constexpr long " + name + "[] = {" + list + "};\n";
    }
  }
  return out;
}

}  // namespace codegen

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& field, const std::string& problem) {
  throw std::invalid_argument(file + ": " + field + ": " + problem);
}

std::string text_field(const nlohmann::json& doc, const std::string& key, const std::string& file,
                       const std::string& field) {
  if (!doc.contains(key) || !doc[key].is_string() || doc[key].get<std::string>().empty())
    bad(file, field, "missing or not a string; write e.g. \"" + key + "\": \"...\"");
  return doc[key].get<std::string>();
}

std::string read_source(const fs::path& base, const std::string& name, const std::string& file,
                        const std::string& field) {
  fs::path path = fs::path(name).is_absolute() ? fs::path(name) : base / name;
  try {
    return read_file_text(path.string());
  } catch (const std::exception& e) {
    bad(file, field, "cannot read " + path.string() + " (" + e.what() + "); give a path relative to " + file);
  }
}

// Values computed outside for each configuration, e.g. by Kernel Tuner's
// front end: #define lines (its defines that are functions of the
// configuration) and a GPU kernel's grid divisors (its grid_div_x/y/z).
struct derived_values {
  std::string defines;  ///< "#define NAME text" lines
  std::optional<std::array<std::int64_t, 3>> grid_divisor;
};

struct derived_table {
  std::string file;  ///< where it was read, for messages
  std::string text;  ///< its contents, part of the task's key
  std::unordered_map<configuration, derived_values, configuration_hash> values;

  const derived_values* find(const configuration& config) const {
    auto it = values.find(config);
    return it == values.end() ? nullptr : &it->second;
  }
  std::string missing() const { return "no derived values for this configuration in " + file; }
};

// "derived": a file {"configurations": [{"config": {...}, "defines": {"NAME":
// "text"}, "grid_divisor": [dx, dy, dz]}, ...]}, one entry per configuration.
std::shared_ptr<const derived_table> read_derived(const nlohmann::json& doc, const fs::path& base,
                                                  const std::string& file, const search_space& space) {
  if (!doc.contains("derived")) return nullptr;
  auto table = std::make_shared<derived_table>();
  table->file = (base / text_field(doc, "derived", file, "derived")).string();
  table->text = read_source(base, doc["derived"].get<std::string>(), file, "derived");
  const std::string& path = table->file;
  nlohmann::json parsed = nlohmann::json::parse(table->text, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("configurations") || !parsed["configurations"].is_array())
    bad(path, "configurations",
        "expected {\"configurations\": [{\"config\": {...}, \"defines\": {...}, \"grid_divisor\": [x, y, z]}]}");
  const auto& entries = parsed["configurations"];
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& entry = entries[i];
    std::string where = "configurations[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("config") || !entry["config"].is_object())
      bad(path, where, "expected an object whose \"config\" holds the parameters' values");
    configuration config;
    try {
      config = space.from_json(entry["config"].dump());
    } catch (const std::invalid_argument& e) {
      bad(path, where + ".config", e.what());
    }
    derived_values values;
    if (entry.contains("defines")) {
      if (!entry["defines"].is_object()) bad(path, where + ".defines", "expected names mapped to their text");
      for (const auto& [name, text] : entry["defines"].items()) {
        // One line: no line break (a carriage return is one to the
        // preprocessor) and no backslash at its end (it would join the next
        // line of the generated source to this definition).
        if (!codegen::is_identifier(name) || !text.is_string() ||
            text.get<std::string>().find_first_of("\n\r") != std::string::npos ||
            (!text.get<std::string>().empty() && text.get<std::string>().back() == '\\'))
          bad(path, where + ".defines." + name,
              "expected a C identifier mapped to one line of text, without a line break or a backslash at its end");
        values.defines += "#define " + name + " " + text.get<std::string>() + "\n";
      }
    }
    if (entry.contains("grid_divisor")) {
      const auto& divisor = entry["grid_divisor"];
      if (!divisor.is_array() || divisor.empty() || divisor.size() > 3)
        bad(path, where + ".grid_divisor", "expected 1 to 3 positive integers");
      std::array<std::int64_t, 3> extents{1, 1, 1};
      for (std::size_t k = 0; k < divisor.size(); ++k) {
        if (!divisor[k].is_number_integer() || divisor[k].get<std::int64_t>() < 1)
          bad(path, where + ".grid_divisor", "expected 1 to 3 positive integers");
        extents[k] = divisor[k].get<std::int64_t>();
      }
      values.grid_divisor = extents;
    }
    if (!table->values.emplace(config, std::move(values)).second)
      bad(path, where + ".config", "the same configuration as an earlier entry; give each one once");
  }
  return table;
}

// How the trampoline hands over arrays: as the described pointer type, or
// (Kernel Tuner passes raw pointers) as whatever pointer type the entry
// declares, e.g. a vector type's.
enum class array_passing { typed, untyped };

// Converts to any pointer type.
constexpr const char* untyped_pointer =
    "\nnamespace {\nstruct tune_untyped_pointer {\n  void* p;\n  template <class T>\n"
    "  operator T*() const { return static_cast<T*>(p); }\n};\n}  // namespace\n";

// `extern "C" void <symbol>(void* const* a)` calling `entry` with typed
// arguments; with `reported` the entry returns its run's milliseconds, which
// the trampoline keeps in the `double` of that name.
std::string trampoline(const std::string& symbol, const std::string& entry,
                       const std::vector<kernel_argument>& arguments, const std::string& reported = {},
                       array_passing arrays = array_passing::typed) {
  std::string call;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string type = to_string(arguments[i].type);
    std::string slot = "a[" + std::to_string(i) + "]";
    if (!call.empty()) call += ", ";
    if (!is_array(arguments[i].type))
      call += "*static_cast<const " + type + "*>(" + slot + ")";
    else if (arrays == array_passing::untyped)
      call += "tune_untyped_pointer{" + slot + "}";
    else
      call += "static_cast<" + type + ">(" + slot + ")";
  }
  std::string prelude = arrays == array_passing::untyped ? untyped_pointer : "";
  if (!reported.empty())
    return prelude + "\nextern \"C\" {\ndouble " + reported + " = -1.0;\nvoid " + symbol + "(void* const* a) { " +
           reported + " = static_cast<double>(" + entry + "(" + call + ")); }\n}\n";
  return prelude + "\nextern \"C\" void " + symbol + "(void* const* a) { " + entry + "(" + call + "); }\n";
}

// Kernel Tuner's convention: the grid covers problem_size with blocks of
// block_size, each entry a number or the name of a parameter.
void read_cuda_launch(const nlohmann::json& doc, const std::string& file, kernel_program& program,
                      std::shared_ptr<const derived_table> derived) {
  auto read_extents = [&](const char* key, bool names_allowed) {
    if (!doc.contains(key) || !doc[key].is_array() || doc[key].empty() || doc[key].size() > 3)
      bad(file, key, "a CUDA kernel needs 1 to 3 extents, e.g. \"" + std::string(key) + "\": [4096, 1, 1]");
    std::vector<nlohmann::json> extents(doc[key].begin(), doc[key].end());
    extents.resize(3, 1);
    for (std::size_t i = 0; i < 3; ++i) {
      const auto& e = extents[i];
      bool ok = (e.is_number_integer() && e.get<std::int64_t>() > 0) ||
                (names_allowed && e.is_string() && program.space->find(e.get<std::string>()));
      if (!ok)
        bad(file, std::string(key) + "[" + std::to_string(i) + "]",
            names_allowed ? "expected a positive integer or the name of a parameter of the space"
                          : "expected a positive integer");
    }
    return extents;
  };
  auto problem = read_extents("problem_size", false);
  auto block = read_extents("block_size", true);
  auto space = program.space;
  auto block_extents = [space, block](const configuration& config) {
    std::int64_t out[3];
    for (int i = 0; i < 3; ++i)
      out[i] = block[i].is_string()
                   ? static_cast<std::int64_t>(codegen::number_value(*space, config, block[i].get<std::string>()))
                   : block[i].get<std::int64_t>();
    return std::vector<std::int64_t>(out, out + 3);
  };
  program.geometry = [problem, block_extents, derived](const configuration& config) {
    auto b = block_extents(config);
    const auto* values = derived ? derived->find(config) : nullptr;
    launch_geometry g;
    for (int i = 0; i < 3; ++i) {
      auto p = problem[i].get<std::int64_t>();
      auto divisor = values && values->grid_divisor ? (*values->grid_divisor)[i] : b[i];
      g.block[i] = static_cast<unsigned>(b[i]);
      g.grid[i] = static_cast<unsigned>((p + divisor - 1) / std::max<std::int64_t>(divisor, 1));
    }
    return g;
  };
  program.check = [block_extents, derived](const configuration& config) -> std::string {
    if (derived && !derived->find(config)) return derived->missing();
    auto b = block_extents(config);
    if (b[0] < 1 || b[1] < 1 || b[2] < 1) return "block extents must be positive";
    if (b[0] * b[1] * b[2] > 1024) return std::to_string(b[0] * b[1] * b[2]) + " threads per block; at most 1024";
    return {};
  };
}

}  // namespace

kernel_program_ptr read_user_kernel(const std::string& launch_path) {
  const std::string& file = launch_path;
  nlohmann::json doc;
  try {
    doc = read_json_file(launch_path);
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    bad(file, "(file)", std::string("not readable JSON: ") + e.what());
  }
  if (!doc.is_object()) bad(file, "(top level)", "expected a JSON object with source, entry, space, arguments");
  fs::path base = fs::path(launch_path).parent_path();

  auto program = std::make_shared<kernel_program>();
  std::string source_name = text_field(doc, "source", file, "source");
  std::string source = read_source(base, source_name, file, "source");
  std::string entry = text_field(doc, "entry", file, "entry");
  if (!codegen::is_identifier(entry)) bad(file, "entry", "'" + entry + "' is not a C++ function name");
  std::string space_name = text_field(doc, "space", file, "space");
  fs::path space_path = fs::path(space_name).is_absolute() ? fs::path(space_name) : base / space_name;
  auto space = std::make_shared<search_space>(read_space_file(space_path.string()));
  for (const auto& p : space->parameters())
    if (!codegen::is_identifier(p->name()))
      bad(space_path.string(), p->name(), "a parameter name must be a C++ identifier to become a constant");
  program->space = space;

  if (!doc.contains("arguments") || !doc["arguments"].is_array() || doc["arguments"].empty())
    bad(file, "arguments",
        "missing; list the entry's arguments, e.g. [{\"name\": \"y\", \"type\": \"float*\", "
        "\"size\": 1024, \"output\": true}]");
  bool any_output = false;
  for (std::size_t i = 0; i < doc["arguments"].size(); ++i) {
    const auto& a = doc["arguments"][i];
    std::string field = "arguments[" + std::to_string(i) + "]";
    if (!a.is_object()) bad(file, field, "expected an object with name and type");
    kernel_argument arg;
    arg.name = a.value("name", "arg" + std::to_string(i));
    try {
      arg.type = argument_type_from_string(a.value("type", ""));
    } catch (const std::invalid_argument& e) {
      bad(file, field + ".type", e.what());
    }
    if (is_array(arg.type)) {
      if (!a.contains("size") || !a["size"].is_number_integer() || a["size"].get<std::int64_t>() <= 0)
        bad(file, field + ".size", "an array needs a positive element count, e.g. \"size\": 1024");
      arg.size = a["size"].get<std::int64_t>();
      arg.output = a.value("output", false);
      if (a.contains("data")) {
        if (!a["data"].is_string() || arg.output)
          bad(file, field + ".data",
              "an input array's data is the name of a file of its raw elements, e.g. \"data\": \"a.bin\"");
        fs::path data = a["data"].get<std::string>();
        arg.data = (data.is_absolute() ? data : fs::absolute(base / data)).string();
      }
      any_output = any_output || arg.output;
    } else {
      if (!a.contains("value") || !a["value"].is_number())
        bad(file, field + ".value", "a scalar needs a number, e.g. \"value\": 1024");
      arg.value = a["value"].get<double>();
    }
    program->arguments.push_back(arg);
  }
  // The expected outputs: computed by a reference, or given as a file (which
  // may check nothing when no array is an output).
  if (doc.contains("expected")) {
    if (doc.contains("reference")) bad(file, "expected", "give either \"expected\" or \"reference\", not both");
    std::string expected = text_field(doc, "expected", file, "expected");
    program->expected_file =
        (fs::path(expected).is_absolute() ? fs::path(expected) : fs::absolute(base / expected)).string();
  } else {
    if (!any_output) bad(file, "arguments", "no array has \"output\": true, so nothing could be checked");
    if (!doc.contains("reference") || !doc["reference"].is_object())
      bad(file, "reference",
          "missing; give {\"source\": \"reference.cpp\", \"entry\": \"name\"}, or the expected outputs as "
          "\"expected\": \"file\"");
    const auto& ref = doc["reference"];
    std::string ref_entry = text_field(ref, "entry", file, "reference.entry");
    if (!codegen::is_identifier(ref_entry))
      bad(file, "reference.entry", "'" + ref_entry + "' is not a C++ function name");
    program->reference_source =
        read_source(base, text_field(ref, "source", file, "reference.source"), file, "reference.source") +
        trampoline("tune_reference", ref_entry, program->arguments);
    program->reference_entry = "tune_reference";
  }
  program->tolerance = doc.value("tolerance", 0.0);
  if (doc.contains("absolute_tolerance") && !doc["absolute_tolerance"].is_boolean())
    bad(file, "absolute_tolerance", "expected true (|out - expected| <= tolerance) or false (relative, the default)");
  program->absolute_tolerance = doc.value("absolute_tolerance", false);
  program->flops = doc.value("flops", 0.0);
  std::vector<std::string> flags;
  if (doc.contains("flags")) {
    if (!doc["flags"].is_array()) bad(file, "flags", "expected a list of compiler flags");
    for (const auto& f : doc["flags"]) {
      if (!f.is_string()) bad(file, "flags", "expected a list of strings");
      flags.push_back(f.get<std::string>());
    }
  }
  program->flags = [flags](const configuration&) { return flags; };
  auto derived = read_derived(doc, base, file, *space);
  program->key =
      "user:" + fs::path(launch_path).filename().string() + ":" +
      cache_hash({source, program->reference_source, doc.dump(), derived ? derived->text : ""}).substr(0, 16);
  auto derived_defines = [derived](const configuration& config) -> std::string {
    const auto* values = derived ? derived->find(config) : nullptr;
    return values ? values->defines : "";
  };
  auto arguments = program->arguments;
  std::string full_source = "#line 1 \"" + fs::absolute(base / source_name).string() + "\"\n" + source;
  std::string language = doc.value("language", "c++");
  std::string constants = doc.value("constants", "constexpr");
  if (constants != "constexpr" && constants != "define")
    bad(file, "constants", "'" + constants + "' is neither \"constexpr\" (the default) nor \"define\" (#define lines)");
  bool defines = constants == "define";
  std::string reported;
  if (doc.contains("returns_time")) {
    if (!doc["returns_time"].is_boolean() || language != "c++")
      bad(file, "returns_time",
          "expected true (a C++ entry returns its run's milliseconds, which are its time) or false");
    if (doc["returns_time"].get<bool>()) reported = program->reported_time = "tune_reported_ms";
  }
  if (doc.contains("untyped_pointers") && !doc["untyped_pointers"].is_boolean())
    bad(file, "untyped_pointers",
        "expected true (arrays converted to the pointer types the entry declares) or false (the default)");
  auto arrays = doc.value("untyped_pointers", false) ? array_passing::untyped : array_passing::typed;
  if (language == "cuda" || language == "hip") {
    // A HIP kernel is CUDA's launch with the HIP runtime header in front.
    read_cuda_launch(doc, file, *program, derived);
    std::string header = language == "hip" ? "#include <hip/hip_runtime.h>\n" : "";
    program->source = [space, full_source, defines, header, derived_defines](const configuration& config) {
      return header +
             (defines ? codegen::configuration_defines(*space, config)
                      : codegen::configuration_constants(*space, config, false)) +
             derived_defines(config) + full_source;
    };
    program->entry = entry;
    program->gpu_language = language;
    program->key += ":" + language;
  } else if (language == "c++") {
    program->source = [space, full_source, entry, arguments, defines, reported, arrays,
                       derived_defines](const configuration& config) {
      return (defines ? codegen::configuration_defines(*space, config)
                      : codegen::configuration_constants(*space, config, true)) +
             derived_defines(config) + full_source + trampoline("tune_entry", entry, arguments, reported, arrays);
    };
    if (derived)
      program->check = [derived](const configuration& config) {
        return derived->find(config) ? std::string() : derived->missing();
      };
  } else {
    bad(file, "language", "'" + language + "' is none of \"c++\" (the default), \"cuda\" and \"hip\"");
  }
  return program;
}

backend_ptr make_user_kernel_backend(const std::string& launch_path, const std::string& backend_name,
                                     const task_backend_options& options) {
  auto program = read_user_kernel(launch_path);
  bool gpu = !program->gpu_language.empty();
  bool hip = program->gpu_language == "hip";
  if (backend_name == "cpu" && !gpu) return make_cpu_backend(program, options);
#ifdef TUNE_WITH_NVRTC
  if (backend_name == "cuda" && gpu && !hip) return make_cuda_backend(program, options);
#endif
#ifdef TUNE_WITH_HIP
  if (backend_name == "hip" && hip) return make_hip_backend(program, options);
#endif
  std::string kind = hip ? "\"language\": \"hip\"" : gpu ? "\"language\": \"cuda\"" : "C++";
  std::string fix = hip   ? "; use hip (in a build with hipcc)"
                    : gpu ? "; use cuda (in a build with NVRTC)"
                          : "; use cpu";
  throw std::invalid_argument(launch_path + ": a " + kind + " kernel cannot run on the '" + backend_name + "' backend" +
                              fix);
}

}  // namespace tune
