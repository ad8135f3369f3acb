// tune_space_*: search spaces read from files or JSON text, and the
// configuration <-> JSON conversions of the C API.
#include <cstring>
#include <nlohmann/json.hpp>

#include "boundary.hpp"
#include "tune/engine/readers.hpp"

using tune::c_api::boundary_error;
using tune::c_api::guarded;
using tune::c_api::require;

namespace {

tune_space* wrap(tune::search_space space) {
  auto handle = std::make_unique<tune_space>();
  handle->space = std::make_shared<const tune::search_space>(std::move(space));
  for (const auto& p : handle->space->parameters()) handle->names.push_back(p->name());
  return handle.release();
}

void check_count(const tune_space* space, size_t count) {
  if (count != space->space->dimension())
    throw std::invalid_argument("`count` is " + std::to_string(count) + " but the space has " +
                                std::to_string(space->space->dimension()) +
                                " parameters; pass one index per parameter");
}

}  // namespace

extern "C" {

tune_status tune_space_from_file(const char* path, tune_space** out) {
  return guarded(__func__, [&] {
    require(path, "path");
    require(out, "out");
    *out = nullptr;
    *out = wrap(tune::read_space_file(path));
  });
}

tune_status tune_space_from_json(const char* json_text, tune_space** out) {
  return guarded(__func__, [&] {
    require(json_text, "json_text");
    require(out, "out");
    *out = nullptr;
    auto doc = nlohmann::json::parse(json_text, nullptr, false);
    if (doc.is_discarded())
      throw std::invalid_argument(
          std::string("`json_text` is not JSON: '") + json_text +
          "'; expected an NNI space such as {\"x\": {\"_type\": \"choice\", \"_value\": [1, 2]}}");
    *out = wrap(tune::nni_space_from_json(doc, "json_text"));
  });
}

void tune_space_free(tune_space* space) { delete space; }

tune_status tune_space_dimension(const tune_space* space, size_t* out) {
  return guarded(__func__, [&] {
    require(space, "space");
    require(out, "out");
    *out = space->space->dimension();
  });
}

tune_status tune_space_parameter(const tune_space* space, size_t index, const char** name, const char** kind,
                                 uint64_t* cardinality) {
  return guarded(__func__, [&] {
    require(space, "space");
    const auto& parameters = space->space->parameters();
    if (index >= parameters.size())
      throw boundary_error(TUNE_ERROR_OUT_OF_RANGE, "`index` " + std::to_string(index) + " is past the last of " +
                                                        std::to_string(parameters.size()) + " parameters");
    if (name) *name = space->names[index].c_str();
    if (kind) *kind = tune::to_string(parameters[index]->kind());
    if (cardinality) *cardinality = parameters[index]->cardinality();
  });
}

tune_status tune_space_cartesian_size(const tune_space* space, uint64_t* out) {
  return guarded(__func__, [&] {
    require(space, "space");
    require(out, "out");
    auto size = space->space->cartesian_size();
    if (!size) throw boundary_error(TUNE_ERROR_OUT_OF_RANGE, "the Cartesian product exceeds 2^64 configurations");
    *out = *size;
  });
}

tune_status tune_space_count_valid(const tune_space* space, uint64_t* out) {
  return guarded(__func__, [&] {
    require(space, "space");
    require(out, "out");
    auto count = space->space->count_valid();
    if (!count)
      throw boundary_error(TUNE_ERROR_OUT_OF_RANGE,
                           "the space is too large to enumerate its valid configurations (over 20,000,000)");
    *out = *count;
  });
}

tune_status tune_space_is_valid(const tune_space* space, const char* config_json, int* valid) {
  return guarded(__func__, [&] {
    require(space, "space");
    require(valid, "valid");
    *valid = space->space->is_valid(tune::c_api::parse_config(*space->space, config_json, "config_json")) ? 1 : 0;
  });
}

tune_status tune_space_config_to_json(const tune_space* space, const uint64_t* indices, size_t count, char* buffer,
                                      size_t buffer_size, size_t* needed) {
  return guarded(__func__, [&] {
    require(space, "space");
    require(indices, "indices");
    check_count(space, count);
    tune::configuration config(indices, indices + count);
    for (size_t i = 0; i < count; ++i) {
      auto cardinality = space->space->parameters()[i]->cardinality();
      if (config[i] >= cardinality)
        throw boundary_error(TUNE_ERROR_OUT_OF_RANGE, "`indices[" + std::to_string(i) + "]` is " +
                                                          std::to_string(config[i]) + " but parameter '" +
                                                          space->names[i] + "' has " + std::to_string(cardinality) +
                                                          " values");
    }
    std::string text = space->space->to_json(config);
    if (needed) *needed = text.size() + 1;
    if (!buffer || buffer_size < text.size() + 1)
      throw boundary_error(TUNE_ERROR_BUFFER_TOO_SMALL, "`buffer_size` is " + std::to_string(buffer_size) +
                                                            " bytes; the configuration needs " +
                                                            std::to_string(text.size() + 1));
    std::memcpy(buffer, text.c_str(), text.size() + 1);
  });
}

tune_status tune_space_config_from_json(const tune_space* space, const char* config_json, uint64_t* indices,
                                        size_t count) {
  return guarded(__func__, [&] {
    require(space, "space");
    require(indices, "indices");
    check_count(space, count);
    auto config = tune::c_api::parse_config(*space->space, config_json, "config_json");
    std::copy(config.begin(), config.end(), indices);
  });
}

}  // extern "C"
