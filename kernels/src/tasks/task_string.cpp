// Task strings (matmul:NxKxM, bmm:…, conv2d:…): parsing and printing, apart
// from the backends that build a task's kernels (task.cpp), so that readers
// of task strings need no backend.
#include <algorithm>
#include <charconv>
#include <sstream>
#include <stdexcept>

#include "tune/kernels/task.hpp"

namespace tune {

namespace {

constexpr const char* expected_forms =
    "expected matmul:NxKxM (e.g. matmul:512x1024x1024), bmm:BxNxKxM[:nn|tn|nt] (e.g. bmm:960x128x128x64:nt) "
    "or conv2d:BxCxHxW:FxKHxKW[:sS][:pP][:own] (e.g. conv2d:512x3x227x227:64x11x11:s4:p0)";

[[noreturn]] void bad_task(const std::string& text, const std::string& problem) {
  throw std::invalid_argument("task '" + text + "': " + problem + "; " + expected_forms);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::stringstream stream(text);
  while (std::getline(stream, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

/// The largest size, stride or padding: sums and products of them stay
/// within 64 bits.
constexpr std::int64_t max_size = (std::int64_t{1} << 31) - 1;
/// The most elements one tensor of a task may hold (4 TiB of floats).
constexpr double max_elements = 1099511627776.0;  // 2^40

std::int64_t positive(const std::string& text, const std::string& field, const std::string& whole) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  bool too_large = ec == std::errc::result_out_of_range && text.front() != '-';
  if ((ec != std::errc{} && !too_large) || end != text.data() + text.size() || (!too_large && value <= 0))
    bad_task(whole, field + " '" + text + "' is not a positive integer");
  if (too_large || value > max_size)
    bad_task(whole, field + " '" + text + "' is larger than " + std::to_string(max_size));
  return value;
}

/// Refuses a task one of whose tensors would hold more than max_elements.
void check_tensor_sizes(const task_spec& task, const std::string& text) {
  auto elements = [](auto... sizes) { return (1.0 * ... * static_cast<double>(sizes)); };
  double largest = 0;
  if (task.op == operator_kind::conv2d)
    largest = std::max({elements(task.batch, task.in_channels, task.height, task.width),
                        elements(task.out_channels, task.in_channels, task.kernel_h, task.kernel_w),
                        elements(task.batch, task.out_channels, task.out_height(), task.out_width())});
  else
    largest = std::max({elements(task.batch, task.n, task.k), elements(task.batch, task.k, task.m),
                        elements(task.batch, task.n, task.m)});
  if (largest > max_elements) {
    std::ostringstream count;
    count.precision(3);
    count << largest;
    bad_task(text, "a tensor of " + count.str() + " elements is larger than the 2^40 a task may have");
  }
}

std::vector<std::int64_t> dims(const std::string& text, std::size_t count, const std::string& field,
                               const std::string& whole) {
  auto parts = split(text, 'x');
  if (parts.size() != count)
    bad_task(whole, field + " '" + text + "' should have " + std::to_string(count) + " sizes separated by 'x'");
  std::vector<std::int64_t> out;
  for (const auto& p : parts) out.push_back(positive(p, field, whole));
  return out;
}

}  // namespace

task_spec parse_task(const std::string& text) {
  auto parts = split(text, ':');
  if (parts.empty() || parts[0].empty()) bad_task(text, "no operator");
  task_spec task;
  const auto& op = parts[0];
  if (op == "matmul") {
    if (parts.size() != 2) bad_task(text, "matmul takes one shape");
    auto d = dims(parts[1], 3, "shape", text);
    task.op = operator_kind::matmul;
    task.n = d[0];
    task.k = d[1];
    task.m = d[2];
  } else if (op == "bmm") {
    if (parts.size() < 2 || parts.size() > 3) bad_task(text, "bmm takes a shape and optionally a layout");
    auto d = dims(parts[1], 4, "shape", text);
    task.op = operator_kind::batch_matmul;
    task.batch = d[0];
    task.n = d[1];
    task.k = d[2];
    task.m = d[3];
    std::string layout = parts.size() == 3 ? parts[2] : "nn";
    if (layout == "tn") {
      task.transpose_a = true;
    } else if (layout == "nt") {
      task.transpose_b = true;
    } else if (layout != "nn") {
      bad_task(text, "layout '" + layout + "' is not one of nn, tn, nt");
    }
  } else if (op == "conv2d") {
    if (parts.size() < 3 || parts.size() > 6) bad_task(text, "conv2d takes an image shape and a kernel shape");
    auto image = dims(parts[1], 4, "image shape", text);
    auto kernel = dims(parts[2], 3, "kernel shape", text);
    task.op = operator_kind::conv2d;
    task.batch = image[0];
    task.in_channels = image[1];
    task.height = image[2];
    task.width = image[3];
    task.out_channels = kernel[0];
    task.kernel_h = kernel[1];
    task.kernel_w = kernel[2];
    bool seen_stride = false, seen_pad = false;
    for (std::size_t i = 3; i < parts.size(); ++i) {
      const auto& p = parts[i];
      if (p == "own" && !task.own_layouts) {
        task.own_layouts = true;
      } else if (p.size() >= 2 && p[0] == 's' && !seen_stride) {
        task.stride = positive(p.substr(1), "stride", text);
        seen_stride = true;
      } else if (p.size() >= 2 && p[0] == 'p' && !seen_pad) {
        if (p == "p0") {
          task.pad = 0;
        } else {
          task.pad = positive(p.substr(1), "padding", text);
        }
        seen_pad = true;
      } else {
        bad_task(text, "option '" + p + "' is not sS (stride), pP (padding) or own (own layouts), or is repeated");
      }
    }
    if (task.height + 2 * task.pad < task.kernel_h || task.width + 2 * task.pad < task.kernel_w)
      bad_task(text, "the kernel is larger than the padded image");
  } else {
    bad_task(text, "unknown operator '" + op + "'");
  }
  check_tensor_sizes(task, text);
  return task;
}

double task_spec::flops() const {
  if (op == operator_kind::conv2d)
    return 2.0 * batch * out_channels * out_height() * out_width() * in_channels * kernel_h * kernel_w;
  return 2.0 * batch * n * k * m;
}

std::string task_spec::to_string() const {
  auto x = [](auto... v) {
    std::string out;
    ((out += (out.empty() ? "" : "x") + std::to_string(v)), ...);
    return out;
  };
  switch (op) {
    case operator_kind::matmul:
      return "matmul:" + x(n, k, m);
    case operator_kind::batch_matmul:
      return "bmm:" + x(batch, n, k, m) + ":" + (transpose_a ? "tn" : transpose_b ? "nt" : "nn");
    case operator_kind::conv2d:
      return "conv2d:" + x(batch, in_channels, height, width) + ":" + x(out_channels, kernel_h, kernel_w) + ":s" +
             std::to_string(stride) + ":p" + std::to_string(pad) + (own_layouts ? ":own" : "");
  }
  return "?";
}

}  // namespace tune
