#pragma once
// What the two model file readers share (model.cpp reads YAML, onnx_model.cpp
// ONNX): a task made from a built-in task's spec, and the merging of entries
// of one workload; and the ONNX reader itself.

#include <map>
#include <string>

#include "tune/kernels/task.hpp"
#include "tune/model.hpp"

namespace tune::detail {

/// A model's task for a built-in task: its canonical text, family and flops.
model_task builtin_task(const task_spec& spec, std::string name, double count);

/// Adds a file's entries to a model, merging those of one workload (the same
/// key): one task, their counts added, every name kept.
class model_builder {
 public:
  explicit model_builder(model& m) : model_(m) {}
  void add(const std::string& key, model_task task);

 private:
  model& model_;
  std::map<std::string, std::size_t> index_of_;  // key -> index in model_.tasks
};

/// True when this build reads ONNX files (built with Debian's libonnx-dev).
bool onnx_supported();

/// A model's tasks read from an ONNX file (tune::read_model on a ".onnx"
/// path): shapes inferred with ONNX's own shape inference, Conv, MatMul and
/// Gemm nodes mapped to built-in tasks, every other node listed as not tuned.
/// Throws input_error naming the file, the node and the fix; without ONNX
/// support, saying to install libonnx-dev and rebuild.
model read_onnx_model(const std::string& path);

}  // namespace tune::detail
