#pragma once
// What each backend can see on this machine, for `tune-engine devices`.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tune/kernels/backend.hpp"

namespace tune {

struct backend_devices {
  std::string backend;  ///< "cpu", "cuda", "hip"
  bool built = true;    ///< false: this build has no such backend
  bool available = false;
  std::string message;  ///< why none is available, or a note
  struct device {
    device_info info;
    std::vector<std::pair<std::string, std::string>> details;  ///< e.g. {"cores", "16"}
  };
  std::vector<device> devices;
};

/// One entry per backend: cpu, cuda, hip.
std::vector<backend_devices> list_devices();

/// As `tune-engine devices --json` prints them: a list of {backend, built,
/// available, message, devices: [{id, name, details}]}.
nlohmann::json devices_json(const std::vector<backend_devices>& all);

/// "model name" of /proc/cpuinfo ("unknown CPU" when absent).
std::string cpu_model_name();

/// Cores this process may run on.
int cpu_core_count();

}  // namespace tune
