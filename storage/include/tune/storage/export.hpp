#pragma once
// A recorded run written in the formats other tools read, so it can be
// shared, replayed (`tune-engine replay --dataset`, `tune --dataset`) and
// compared:
//
//   results_db ──runs/trials──> export_run(run, format) ──> Kernel Tuner cache
//                                                       └─> T4 results
//
// Both carry the search space: the Kernel Tuner cache in its own
// tune_params_keys / tune_params, T4 (whose results schema has no place for
// it) in the same two fields inside "metadata". The space comes from the
// run's options ("space", written by describe_space when the run was
// created); a run recorded without it gets the values its trials used.
//
// Both formats know scalar values only: a factorization or permutation
// parameter `tile` becomes one column per position, `tile_0`, `tile_1`, …
// (the names constraints use). Statuses map onto each format's few outcomes;
// ok trials keep their time, so the best configuration and the counts of
// trials and of ok trials survive the round trip.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune::storage {

class results_db;

enum class export_format { t4, kernel_tuner };

/// "t4", "kernel-tuner" (the names the CLI takes).
std::string_view to_string(export_format format);
std::optional<export_format> export_format_from_string(std::string_view text);
/// Every format's name, for option checks and help texts.
std::vector<std::string> export_format_names();

/// The search space as recorded in a run's options under "space":
/// {"parameters": [{"name", "kind", "values": [...]}, ...], "constraints": [...]}
/// with every value of every parameter in the parameter's order.
nlohmann::json describe_space(const search_space& space);

/// `options_json` (a JSON object) with "space": describe_space(space) added,
/// unless it already has one. Throws std::invalid_argument when it is not a
/// JSON object.
std::string with_space_description(const std::string& options_json, const search_space& space);

/// The run as a document of `format`. Throws std::invalid_argument naming the
/// database and the run when there is no such run, it has no trial, or a
/// trial's configuration does not fit the recorded space.
nlohmann::ordered_json export_run(const results_db& db, std::int64_t run_id, export_format format);

/// Writes `document` to `file` (a temporary file renamed into place, so a
/// reader never sees half of it). Throws std::invalid_argument naming the
/// file when it cannot be written.
void write_export(const nlohmann::ordered_json& document, const std::filesystem::path& file);

}  // namespace tune::storage
