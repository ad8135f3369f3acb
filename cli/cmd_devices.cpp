// tune-engine devices: what each backend sees on this machine (CPU cores and
// model, CUDA devices or why there are none, HIP).
#include <fmt/format.h>

#include "commands.hpp"
#include "tune/kernels/devices.hpp"

namespace tune::cli {
namespace {

std::string details_text(const backend_devices::device& d) {
  std::string out;
  for (const auto& [key, value] : d.details) out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", key, value);
  return out;
}

void print_table(const std::vector<backend_devices>& all) {
  fmt::print("{:<8} {:<10} {:<4} {}\n", "BACKEND", "STATUS", "ID", "DEVICE");
  for (const auto& b : all) {
    std::string state = !b.built ? "not built" : b.available ? "available" : "none";
    if (b.devices.empty()) {
      fmt::print("{:<8} {:<10} {:<4} {}\n", b.backend, state, "-", b.message);
      continue;
    }
    for (const auto& d : b.devices)
      fmt::print("{:<8} {:<10} {:<4} {} ({})\n", b.backend, state, d.info.id, d.info.name, details_text(d));
    if (!b.message.empty()) fmt::print("{:<8} {:<10} {:<4} note: {}\n", "", "", "", b.message);
  }
}

}  // namespace

void add_devices_command(CLI::App& app, command_list& commands) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("devices", "List the devices each backend (cpu, cuda, hip) sees on this machine");
  sub->add_flag("--json", *json, "Print JSON instead of a table");
  commands.emplace_back(sub, [json] {
    auto all = list_devices();
    if (*json) {
      fmt::print("{}\n", devices_json(all).dump(2));
    } else {
      print_table(all);
    }
    return exit_ok;
  });
}

}  // namespace tune::cli
