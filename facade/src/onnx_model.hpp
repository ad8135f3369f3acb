#pragma once
// A model's tasks read from an ONNX file (tune::read_model on a ".onnx" path):
// shapes inferred with ONNX's own shape inference, Conv, MatMul and Gemm nodes
// mapped to built-in tasks, every other node listed as not tuned.

#include <string>

#include "tune/model.hpp"

namespace tune::detail {

/// True when this build reads ONNX files (built with Debian's libonnx-dev).
bool onnx_supported();

/// Throws input_error naming the file, the node and the fix; without ONNX
/// support, saying to install libonnx-dev and rebuild.
model read_onnx_model(const std::string& path);

}  // namespace tune::detail
