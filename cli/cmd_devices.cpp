// tune-engine devices: what each backend sees on this machine (CPU cores and
// model, CUDA devices or why there are none, HIP), and which of their cores
// or GPUs other runs hold leased now (device_lease.hpp).
#include <fmt/format.h>

#include "commands.hpp"
#include "tune/kernels/device_lease.hpp"
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

/// The backend a lease's resource belongs to: "cpu-core-3" -> "cpu".
std::string backend_of(const std::string& resource) { return resource.substr(0, resource.find('-')); }

void print_leases(const std::vector<held_lease>& leases) {
  if (leases.empty()) {
    fmt::print("leases: none held now ({})\n", lease_dir());
    return;
  }
  fmt::print("leases held now ({}):\n", lease_dir());
  for (const auto& l : leases) fmt::print("  {:<12} {}\n", l.resource, l.holder.describe());
}

nlohmann::json with_leases(nlohmann::json backends, const std::vector<held_lease>& leases) {
  for (auto& b : backends) {
    auto held = nlohmann::json::array();
    for (const auto& l : leases)
      if (backend_of(l.resource) == b.value("backend", ""))
        held.push_back({{"resource", l.resource},
                        {"pid", l.holder.pid},
                        {"command", l.holder.command},
                        {"since", l.holder.since > 0 ? nlohmann::json(l.holder.since) : nlohmann::json()}});
    b["leases"] = std::move(held);
  }
  return backends;
}

}  // namespace

void add_devices_command(CLI::App& app, command_list& commands) {
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("devices",
                                 "List the devices each backend (cpu, cuda, hip) sees on this machine, and the leases "
                                 "other runs hold on them now");
  sub->add_flag("--json", *json,
                "Print JSON instead of a table (each backend's \"leases\": resource, pid, command, since)");
  commands.emplace_back(sub, [json] {
    auto all = list_devices();
    auto leases = held_leases();
    if (*json) {
      fmt::print("{}\n", with_leases(devices_json(all), leases).dump(2));
    } else {
      print_table(all);
      print_leases(leases);
    }
    return exit_ok;
  });
}

}  // namespace tune::cli
