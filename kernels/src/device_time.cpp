// Where a device's measuring time went (backend.hpp).
#include <algorithm>

#include "tune/kernels/backend.hpp"

namespace tune {

void device_time::add(const trial& t) {
  if (t.reused()) return;  // measured by another run: no time spent here
  ++trials;
  double run = std::max(0.0, t.run_s);
  double kernel = std::clamp(t.kernel_s, 0.0, run);
  switch (t.state) {
    case status::ok:
      (t.stopped_early ? stopped_early_s : measured_s) += kernel;
      overhead_s += run - kernel;
      break;
    case status::too_slow:
      too_slow_s += run;
      break;
    case status::run_timeout:
      timeout_s += run;
      break;
    default:
      failed_s += run;
      break;
  }
}

}  // namespace tune
