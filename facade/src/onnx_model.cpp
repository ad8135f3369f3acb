#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <vector>

#include "model_detail.hpp"

#ifdef TUNE_WITH_ONNX
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#endif

namespace tune::detail {

#ifndef TUNE_WITH_ONNX

bool onnx_supported() { return false; }

model read_onnx_model(const std::string& path) {
  throw input_error("model file " + path +
                    ": this tune-engine was built without ONNX support; install Debian's libonnx-dev and rebuild, or "
                    "write the model's tasks as YAML (docs/models.md)");
}

#else

bool onnx_supported() { return true; }

namespace {

using shape = std::vector<std::int64_t>;

/// Why a node is not tuned, when it is of a supported kind.
struct not_mapped {
  std::string why;
};

/// The tensor shapes the file declares or shape inference found; a shape with
/// an unknown dimension is absent, with the reason.
class shapes {
 public:
  explicit shapes(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) known_[t.name()] = shape(t.dims().begin(), t.dims().end());
    auto add = [&](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      shape s;
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) {
          unknown_[v.name()] =
              d.has_dim_param() ? "dimension '" + d.dim_param() + "' is symbolic" : "a dimension is unknown";
          return;
        }
        s.push_back(d.dim_value());
      }
      known_[v.name()] = s;
    };
    for (const auto& v : g.input()) add(v);
    for (const auto& v : g.value_info()) add(v);
    for (const auto& v : g.output()) add(v);
  }

  const shape& of(const std::string& tensor) const {
    auto it = known_.find(tensor);
    if (it != known_.end()) return it->second;
    auto why = unknown_.find(tensor);
    throw not_mapped{"the shape of '" + tensor + "' is not known (" +
                     (why == unknown_.end() ? std::string("shape inference found none") : why->second) +
                     "); export the model with fixed shapes"};
  }

 private:
  std::map<std::string, shape> known_;
  std::map<std::string, std::string> unknown_;
};

std::optional<std::int64_t> int_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return std::nullopt;
}

std::vector<std::int64_t> ints_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

std::string conv_task(const onnx::NodeProto& node, const shapes& s) {
  if (node.input_size() < 2) throw not_mapped{"a Conv needs an input and weights"};
  const auto& x = s.of(node.input(0));
  const auto& w = s.of(node.input(1));
  if (x.size() != 4 || w.size() != 4) throw not_mapped{"only 2-D convolutions (4-D tensors) are tuned"};
  if (int_attribute(node, "group").value_or(1) != 1)
    throw not_mapped{
        fmt::format("grouped convolution (group {}) is not a built-in task", *int_attribute(node, "group"))};
  for (auto d : ints_attribute(node, "dilations"))
    if (d != 1) throw not_mapped{"dilated convolution is not a built-in task"};
  for (const auto& a : node.attribute())
    if (a.name() == "auto_pad" && a.s() != "NOTSET")
      throw not_mapped{"auto_pad " + a.s() + " is not read; export with explicit pads"};
  auto strides = ints_attribute(node, "strides");
  auto pads = ints_attribute(node, "pads");
  const std::int64_t stride = strides.empty() ? 1 : strides[0];
  for (auto v : strides)
    if (v != stride) throw not_mapped{"unequal strides are not a built-in task"};
  const std::int64_t pad = pads.empty() ? 0 : pads[0];
  for (auto v : pads)
    if (v != pad) throw not_mapped{"unequal padding is not a built-in task"};
  if (w[1] != x[1]) throw not_mapped{fmt::format("weights of {} channels for an input of {}", w[1], x[1])};
  return fmt::format("conv2d:{}x{}x{}x{}:{}x{}x{}:s{}:p{}", x[0], x[1], x[2], x[3], w[0], w[2], w[3], stride, pad);
}

std::int64_t product(shape::const_iterator from, shape::const_iterator to) {
  std::int64_t p = 1;
  for (auto it = from; it != to; ++it) p *= *it;
  return p;
}

std::string matmul_task(const onnx::NodeProto& node, const shapes& s) {
  const auto& a = s.of(node.input(0));
  const auto& b = s.of(node.input(1));
  if (a.size() < 2 || b.size() < 2) throw not_mapped{"a MatMul of a vector is not a built-in task"};
  const std::int64_t n = a[a.size() - 2], k = a.back(), m = b.back();
  if (b[b.size() - 2] != k) throw not_mapped{fmt::format("inner dimensions {} and {} differ", k, b[b.size() - 2])};
  if (b.size() == 2) return fmt::format("matmul:{}x{}x{}", product(a.begin(), a.end() - 1), k, m);
  // Batched: the same batch dimensions on both sides (no broadcasting).
  if (!std::equal(a.begin(), a.end() - 2, b.begin(), b.end() - 2) || a.size() != b.size())
    throw not_mapped{"a batched MatMul that broadcasts its batch dimensions is not a built-in task"};
  return fmt::format("bmm:{}x{}x{}x{}", product(a.begin(), a.end() - 2), n, k, m);
}

std::string gemm_task(const onnx::NodeProto& node, const shapes& s) {
  const auto& a = s.of(node.input(0));
  const auto& b = s.of(node.input(1));
  if (a.size() != 2 || b.size() != 2) throw not_mapped{"a Gemm of tensors that are not matrices"};
  const bool ta = int_attribute(node, "transA").value_or(0) != 0;
  const bool tb = int_attribute(node, "transB").value_or(0) != 0;
  const std::int64_t n = ta ? a[1] : a[0], k = ta ? a[0] : a[1], m = tb ? b[0] : b[1];
  if (ta && tb) throw not_mapped{"a Gemm with both operands transposed is not a built-in task"};
  if (!ta && !tb) return fmt::format("matmul:{}x{}x{}", n, k, m);
  // One operand stored transposed: a batched MatMul of one with that layout.
  return fmt::format("bmm:1x{}x{}x{}:{}", n, k, m, ta ? "tn" : "nt");
}

}  // namespace

model read_onnx_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("model file " + path + ": cannot be read; give the path of an ONNX or YAML model file");
  onnx::ModelProto proto;
  if (!proto.ParseFromIstream(&in))
    throw input_error("model file " + path + ": not an ONNX model (the protobuf does not parse)");
  try {
    onnx::shape_inference::InferShapes(proto);
  } catch (const std::exception& e) {
    throw input_error("model file " + path + ": ONNX shape inference failed: " + e.what());
  }
  const shapes s(proto.graph());
  model m;
  m.origin = path;
  m.name = proto.graph().name().empty() ? std::filesystem::path(path).stem().string() : proto.graph().name();
  model_builder builder(m);
  std::map<std::string, std::size_t> not_tuned;  // op type -> count
  for (int i = 0; i < proto.graph().node_size(); ++i) {
    const auto& node = proto.graph().node(i);
    const std::string name = node.name().empty() ? fmt::format("{}#{}", node.op_type(), i) : node.name();
    const auto& op = node.op_type();
    if (op != "Conv" && op != "MatMul" && op != "Gemm") {
      ++not_tuned[op];
      continue;
    }
    std::string text;
    try {
      text = op == "Conv" ? conv_task(node, s) : op == "MatMul" ? matmul_task(node, s) : gemm_task(node, s);
    } catch (const not_mapped& e) {
      m.unsupported.push_back(op + " '" + name + "': " + e.why);
      continue;
    }
    auto task = builtin_task(parse_task(text), name, 1.0);
    const auto key = task.task;  // canonical: one shape written two ways is one task
    builder.add(key, std::move(task));
  }
  for (const auto& [op, count] : not_tuned) m.not_tuned.push_back(fmt::format("{} x{}", op, count));
  if (m.tasks.empty())
    throw input_error("model file " + path + ": no Conv, MatMul or Gemm node maps to a built-in task" +
                      (m.unsupported.empty() ? std::string() : " (" + m.unsupported.front() + ")"));
  return m;
}

#endif

}  // namespace tune::detail
