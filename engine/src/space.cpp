#include "tune/engine/space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tune/engine/constraint.hpp"
#include "tune/engine/nearest_configuration.hpp"

namespace tune {

std::size_t configuration_hash::operator()(const configuration& config) const noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (auto v : config) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0x100000001b3ULL;
  }
  return static_cast<std::size_t>(h);
}

search_space::search_space(std::vector<parameter_ptr> parameters, std::string origin)
    : parameters_(std::move(parameters)), origin_(std::move(origin)) {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i]) throw std::invalid_argument("search space: parameter " + std::to_string(i) + " is null");
    for (std::size_t j = 0; j < i; ++j) {
      if (parameters_[j]->name() == parameters_[i]->name()) {
        throw std::invalid_argument("search space: parameter '" + parameters_[i]->name() + "' is defined twice");
      }
    }
    feature_count_ += parameters_[i]->feature_count();
    radix_.push_back(parameters_[i]->cardinality());
  }
  keyed_ = !parameters_.empty() && cartesian_size().has_value();
}

std::optional<std::size_t> search_space::find(const std::string& name) const {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i]->name() == name) return i;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> search_space::cartesian_size() const {
  std::uint64_t size = 1;
  for (const auto& p : parameters_) {
    if (__builtin_mul_overflow(size, p->cardinality(), &size)) return std::nullopt;
  }
  return size;
}

std::string search_space::cartesian_size_text() const {
  unsigned __int128 size = 1;
  for (const auto& p : parameters_) {
    if (__builtin_mul_overflow(size, static_cast<unsigned __int128>(p->cardinality()), &size)) {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "about %.3g", std::pow(10.0, cartesian_log10()));
      return buffer;
    }
  }
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(size % 10)));
    size /= 10;
  } while (size > 0);
  return digits;
}

double search_space::cartesian_log10() const {
  double sum = 0;
  for (const auto& p : parameters_) sum += std::log10(static_cast<double>(p->cardinality()));
  return sum;
}

search_space::valid_estimate search_space::estimate_valid(std::size_t draws, rng_type& rng) const {
  valid_estimate out;
  out.draws = draws;
  for (std::size_t i = 0; i < draws; ++i) out.valid += is_valid(draw(rng)) ? 1 : 0;
  if (draws == 0) return out;
  // Wilson score interval, z = 1.96.
  double n = static_cast<double>(draws), p = static_cast<double>(out.valid) / n, z = 1.959964;
  double centre = (p + z * z / (2 * n)) / (1 + z * z / n);
  double half = z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n);
  out.fraction = p;
  out.low = std::max(0.0, centre - half);
  out.high = std::min(1.0, centre + half);
  return out;
}

void search_space::add_constraints(const std::vector<std::string>& expressions) {
  std::vector<std::string> all = constraint_expressions();
  all.insert(all.end(), expressions.begin(), expressions.end());
  constraints_ = make_constraint_set(*this, std::move(all));
  std::lock_guard lock(*cache_mutex_);
  valid_cache_.reset();
}

const std::vector<std::string>& search_space::constraint_expressions() const {
  static const std::vector<std::string> none;
  return constraints_ ? constraints_->expressions() : none;
}

void search_space::restrict_to(std::vector<configuration> members) {
  // Members are found by key when the space has keys, else by value.
  auto keys = keyed_ ? std::make_shared<key_set>() : nullptr;
  auto set = keyed_ ? nullptr : std::make_shared<configuration_set>();
  std::vector<configuration> unique;
  unique.reserve(members.size());
  for (auto& m : members) {
    if (m.size() != parameters_.size()) {
      throw std::invalid_argument("search space: a member configuration has " + std::to_string(m.size()) +
                                  " values, the space has " + std::to_string(parameters_.size()) + " parameters");
    }
    for (std::size_t i = 0; i < m.size(); ++i) {
      if (m[i] >= radix_[i]) {
        throw std::invalid_argument("search space: a member has an out-of-range value for '" + parameters_[i]->name() +
                                    "'");
      }
    }
    if (keys ? keys->insert(*key(m)) : set->insert(m).second) unique.push_back(std::move(m));
  }
  members_ = std::make_shared<std::vector<configuration>>(std::move(unique));
  member_set_ = std::move(set);
  member_keys_ = std::move(keys);
  std::lock_guard lock(*cache_mutex_);
  valid_cache_.reset();
}

const std::vector<configuration>* search_space::members() const { return members_.get(); }

search_space::search_space(std::shared_ptr<const configuration_codec> codec, std::string origin)
    : codec_(std::move(codec)), origin_(std::move(origin)) {}

bool search_space::is_valid(const configuration& config) const {
  if (codec_) return codec_->is_valid(config);
  if (keyed_) {
    auto flat = key(config);  // nullopt: the wrong shape or a value out of range
    return flat && is_valid(config, *flat);
  }
  if (config.size() != parameters_.size()) return false;
  for (std::size_t i = 0; i < config.size(); ++i) {
    if (config[i] >= radix_[i]) return false;
  }
  if (member_set_ && !member_set_->count(config)) return false;
  if (constraints_ && !constraints_->satisfied(config)) return false;
  return true;
}

bool search_space::is_valid(const configuration& config, std::uint64_t key) const {
  if (codec_) return codec_->is_valid(config);
  if (member_keys_ && !member_keys_->contains(key)) return false;
  if (constraints_ && !constraints_->satisfied(config)) return false;
  return true;
}

std::uint64_t search_space::flatten(const configuration& config) const {
  if (!cartesian_size()) throw std::logic_error("search space too large to flatten");
  std::uint64_t flat = 0;
  for (std::size_t i = 0; i < radix_.size(); ++i) flat = flat * radix_[i] + config.at(i);
  return flat;
}

configuration search_space::unflatten(std::uint64_t flat) const {
  configuration config(parameters_.size());
  for (std::size_t i = parameters_.size(); i-- > 0;) {
    auto c = radix_[i];
    config[i] = flat % c;
    flat /= c;
  }
  return config;
}

configuration search_space::draw(rng_type& rng) const {
  configuration config(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) config[i] = parameters_[i]->draw(rng);
  return config;
}

std::optional<configuration> search_space::draw_valid(rng_type& rng, int tries) const {
  if (members_) {
    if (members_->empty()) return std::nullopt;
    std::uniform_int_distribution<std::size_t> pick(0, members_->size() - 1);
    return (*members_)[pick(rng)];
  }
  for (int t = 0; t < tries; ++t) {
    auto config = draw(rng);
    if (is_valid(config)) return config;
  }
  if (auto* valid = enumerate_valid(); valid && !valid->empty()) {
    std::uniform_int_distribution<std::size_t> pick(0, valid->size() - 1);
    return (*valid)[pick(rng)];
  }
  return std::nullopt;
}

const std::vector<configuration>* search_space::enumerate_valid(std::uint64_t limit) const {
  std::lock_guard lock(*cache_mutex_);
  if (valid_cache_) return valid_cache_.get();
  if (members_) {
    auto valid = std::make_shared<std::vector<configuration>>();
    for (const auto& m : *members_) {
      if (!constraints_ || constraints_->satisfied(m)) valid->push_back(m);
    }
    valid_cache_ = std::move(valid);
    return valid_cache_.get();
  }
  auto size = cartesian_size();
  if (!size || *size > limit) return nullptr;
  auto valid = std::make_shared<std::vector<configuration>>();
  for (std::uint64_t flat = 0; flat < *size; ++flat) {
    auto config = unflatten(flat);
    if (!constraints_ || constraints_->satisfied(config)) valid->push_back(std::move(config));
  }
  valid_cache_ = std::move(valid);
  return valid_cache_.get();
}

std::optional<std::uint64_t> search_space::count_valid(std::uint64_t limit) const {
  {
    std::lock_guard lock(*cache_mutex_);
    if (valid_cache_) return valid_cache_->size();
  }
  if (members_ && !constraints_) return members_->size();
  if (members_) return enumerate_valid()->size();
  auto size = cartesian_size();
  if (!constraints_) return size;
  if (!size || *size > limit) return std::nullopt;
  std::uint64_t count = 0;
  for (std::uint64_t flat = 0; flat < *size; ++flat) {
    if (constraints_->satisfied(unflatten(flat))) ++count;
  }
  return count;
}

std::vector<double> search_space::features(const configuration& config) const {
  std::vector<double> out;
  out.reserve(feature_count_);
  for (std::size_t i = 0; i < parameters_.size(); ++i) parameters_[i]->features(config.at(i), out);
  return out;
}

std::vector<std::pair<std::string, parameter_value>> search_space::values(const configuration& config) const {
  std::vector<std::pair<std::string, parameter_value>> out;
  out.reserve(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    out.emplace_back(parameters_[i]->name(), parameters_[i]->value(config.at(i)));
  }
  return out;
}

std::string search_space::to_json(const configuration& config) const {
  if (codec_) return codec_->to_json(config);
  std::string out = "{";
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (i) out += ", ";
    out += to_string(parameter_value{parameters_[i]->name()});
    out += ": ";
    out += to_string(parameters_[i]->value(config.at(i)));
  }
  return out + "}";
}

configuration search_space::from_values(const std::map<std::string, parameter_value>& values) const {
  configuration config(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto it = values.find(parameters_[i]->name());
    if (it == values.end()) {
      throw std::invalid_argument("configuration: parameter '" + parameters_[i]->name() + "' has no value");
    }
    config[i] = parameters_[i]->index_of(it->second);
  }
  for (const auto& [name, value] : values) {
    if (!find(name)) throw std::invalid_argument("configuration: '" + name + "' is not a parameter of the space");
  }
  return config;
}

std::map<std::string, parameter_value> values_from_json(const std::string& text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument("configuration " + text + " is not JSON (" + e.what() + ")");
  }
  if (!doc.is_object()) throw std::invalid_argument("configuration " + text + " is not a JSON object");
  std::map<std::string, parameter_value> values;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const auto& v = it.value();
    if (v.is_boolean()) {
      values.emplace(it.key(), v.get<bool>() ? 1.0 : 0.0);
    } else if (v.is_number()) {
      values.emplace(it.key(), v.get<double>());
    } else if (v.is_string()) {
      values.emplace(it.key(), v.get<std::string>());
    } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number_integer(); })) {
      values.emplace(it.key(), v.get<std::vector<std::int64_t>>());
    } else {
      throw std::invalid_argument("configuration " + text + ": parameter '" + it.key() + "' has the value " + v.dump() +
                                  "; expected a number, a string or a list of integers");
    }
  }
  return values;
}

configuration search_space::from_json(const std::string& text) const {
  if (codec_) return codec_->from_json(text);
  return from_values(values_from_json(text));
}

}  // namespace tune
