#pragma once
// Readers of search-space files. Every reader throws std::invalid_argument
// whose message names the file, the field and the problem (and the fix where
// there is one), e.g.
//   "spec.json: ConfigurationSpace.TuningParameters[2].Values: cannot read '[1, 2'; expected a list such as [1, 2, 4]"

#include <cstddef>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/space.hpp"

namespace tune {

/// The most a file read whole may hold: a ".gz" counts decompressed, so a
/// gzip bomb is refused here instead of filling the memory.
constexpr std::size_t max_file_bytes = std::size_t{256} << 20;
/// The deepest nesting of arrays and objects a JSON file or message may have
/// (no format read here nests more than a few levels).
constexpr std::size_t max_json_depth = 100;

/// Reads a whole file, gunzipping it when its name ends in ".gz". Throws
/// std::invalid_argument naming the file when it holds more than `max_bytes`.
std::string read_file_text(const std::string& path, std::size_t max_bytes = max_file_bytes);

/// The deepest nesting of arrays and objects in JSON text (brackets inside
/// strings do not count); text that is not JSON gives some depth too.
std::size_t json_nesting_depth(std::string_view text);

/// Parses a JSON file (".gz" allowed; at most max_file_bytes, nested at most
/// max_json_depth levels). With `repair_truncated_cache`, a Kernel
/// Tuner cache that lacks its final "}}" (it is written append-only) is
/// repaired first.
nlohmann::json read_json_file(const std::string& path, bool repair_truncated_cache = false);

/// Overrides of the guessed parameter kind, by parameter name:
/// "discrete" or "categorical".
using kind_overrides = std::map<std::string, std::string>;

/// A parameter from the values a file lists (duplicates dropped): numbers
/// become a discrete parameter when more than two are listed, two-valued
/// flags, single values and strings a categorical one (in the order given),
/// unless `override_kind` ("discrete" or "categorical") says otherwise.
/// Throws std::invalid_argument naming `origin` and `field`.
parameter_ptr guess_parameter(const std::string& name, std::vector<parameter_value> values,
                              const std::string& override_kind, const std::string& origin, const std::string& field);

/// NNI OpEvo search space: {"name": {"_type": "factor"|"discrete"|"choice"|"perm", "_value": …}}.
search_space read_nni_space(const std::string& path);
search_space nni_space_from_json(const nlohmann::json& doc, const std::string& origin);

/// T1 spec: ConfigurationSpace.TuningParameters and Conditions.
search_space read_t1_spec(const std::string& path);
search_space t1_space_from_json(const nlohmann::json& doc, const std::string& origin);

/// The tune_params block of a Kernel Tuner cache (in tune_params_keys order).
/// Numeric value lists become discrete parameters; two-valued flags and
/// non-numeric values categorical, unless `overrides` says otherwise.
search_space read_kernel_tuner_space(const std::string& path, const kind_overrides& overrides = {});
search_space kernel_tuner_space_from_json(const nlohmann::json& cache, const std::string& origin,
                                          const kind_overrides& overrides = {});

/// Detects the format of a file (NNI space, T1 spec, Kernel Tuner cache) and reads it.
search_space read_space_file(const std::string& path);

}  // namespace tune
