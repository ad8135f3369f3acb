#include "tune/kernels/user_kernel.hpp"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "codegen.hpp"
#include "tune/engine/readers.hpp"
#include "tune/kernels/cpu_backend.hpp"

namespace tune {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& field, const std::string& problem) {
  throw std::invalid_argument(file + ": " + field + ": " + problem);
}

bool is_identifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
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

// `extern "C" void <symbol>(void* const* a)` calling `entry` with typed arguments.
std::string trampoline(const std::string& symbol, const std::string& entry,
                       const std::vector<kernel_argument>& arguments) {
  std::string call;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    std::string type = to_string(arguments[i].type);
    std::string slot = "a[" + std::to_string(i) + "]";
    if (!call.empty()) call += ", ";
    call += is_array(arguments[i].type) ? "static_cast<" + type + ">(" + slot + ")"
                                        : "*static_cast<const " + type + "*>(" + slot + ")";
  }
  return "\nextern \"C\" void " + symbol + "(void* const* a) { " + entry + "(" + call + "); }\n";
}

std::string configuration_constants(const search_space& space, const configuration& config) {
  std::string out = "// configuration\n";
  for (const auto& [name, value] : space.values(config)) {
    if (auto* number = std::get_if<double>(&value)) {
      if (*number == std::floor(*number) && std::fabs(*number) < 9e18)
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
      out += "constexpr long " + name + "[] = {" + list + "};\n";
    }
  }
  return out;
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
  if (!is_identifier(entry)) bad(file, "entry", "'" + entry + "' is not a C++ function name");
  std::string space_name = text_field(doc, "space", file, "space");
  fs::path space_path = fs::path(space_name).is_absolute() ? fs::path(space_name) : base / space_name;
  auto space = std::make_shared<search_space>(read_space_file(space_path.string()));
  for (const auto& p : space->parameters())
    if (!is_identifier(p->name()))
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
      any_output = any_output || arg.output;
    } else {
      if (!a.contains("value") || !a["value"].is_number())
        bad(file, field + ".value", "a scalar needs a number, e.g. \"value\": 1024");
      arg.value = a["value"].get<double>();
    }
    program->arguments.push_back(arg);
  }
  if (!any_output) bad(file, "arguments", "no array has \"output\": true, so nothing could be checked");

  if (!doc.contains("reference") || !doc["reference"].is_object())
    bad(file, "reference", "missing; give {\"source\": \"reference.cpp\", \"entry\": \"name\"}");
  const auto& ref = doc["reference"];
  std::string ref_entry = text_field(ref, "entry", file, "reference.entry");
  if (!is_identifier(ref_entry)) bad(file, "reference.entry", "'" + ref_entry + "' is not a C++ function name");
  program->reference_source =
      read_source(base, text_field(ref, "source", file, "reference.source"), file, "reference.source") +
      trampoline("tune_reference", ref_entry, program->arguments);
  program->reference_entry = "tune_reference";
  program->tolerance = doc.value("tolerance", 0.0);
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
  program->key = "user:" + fs::path(launch_path).filename().string() + ":" +
                 cache_hash({source, program->reference_source, doc.dump()}).substr(0, 16);
  auto arguments = program->arguments;
  std::string full_source = "#line 1 \"" + fs::absolute(base / source_name).string() + "\"\n" + source;
  program->source = [space, full_source, entry, arguments](const configuration& config) {
    return configuration_constants(*space, config) + full_source + trampoline("tune_entry", entry, arguments);
  };
  return program;
}

backend_ptr make_user_kernel_backend(const std::string& launch_path, const std::string& backend_name,
                                     const task_backend_options& options) {
  if (backend_name != "cpu")
    throw std::invalid_argument("user kernels run on the cpu backend only; '" + backend_name + "' was asked for " +
                                launch_path);
  return make_cpu_backend(read_user_kernel(launch_path), options);
}

}  // namespace tune
