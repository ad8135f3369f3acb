#include "tune/engine/program_edit.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tune {

namespace {
constexpr std::size_t words_per_edit = 5;

constexpr std::pair<edit_kind, std::string_view> kind_names[] = {
    {edit_kind::copy, "copy"},          {edit_kind::remove, "delete"},           {edit_kind::move, "move"},
    {edit_kind::swap_operands, "swap"}, {edit_kind::replace_operand, "replace"},
};

bool uses_anchor(edit_kind kind) { return kind == edit_kind::copy || kind == edit_kind::move; }
bool uses_operand(edit_kind kind) { return kind == edit_kind::swap_operands || kind == edit_kind::replace_operand; }

std::uint32_t read_index(const nlohmann::json& edit, const char* field) {
  auto it = edit.find(field);
  if (it == edit.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() > UINT32_MAX)
    throw std::invalid_argument("edit " + edit.dump() + ": field '" + field +
                                "' must be a non-negative integer below 2^32");
  return it->get<std::uint32_t>();
}
}  // namespace

std::string_view to_string(edit_kind kind) {
  for (auto& [k, name] : kind_names)
    if (k == kind) return name;
  return "unknown";
}

std::optional<edit_kind> edit_kind_from_string(std::string_view text) {
  for (auto& [k, name] : kind_names)
    if (name == text) return k;
  return std::nullopt;
}

edit_kind_set parse_edit_kinds(std::string_view text) {
  const std::string fix =
      " (give a comma-separated subset of copy, delete, move, swap, replace; GEVO-ML's is "
      "copy,delete)";
  edit_kind_set kinds = 0;
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    auto item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto kind = edit_kind_from_string(item);
    if (!kind) throw std::invalid_argument("edit_kinds: '" + std::string(item) + "' is not an edit kind" + fix);
    if (kinds & edit_kind_bit(*kind))
      throw std::invalid_argument("edit_kinds: '" + std::string(item) + "' is given twice" + fix);
    kinds |= edit_kind_bit(*kind);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return kinds;
}

std::string edit_kinds_text(edit_kind_set kinds) {
  std::string out;
  for (auto& [k, name] : kind_names)
    if (kinds & edit_kind_bit(k)) out += (out.empty() ? "" : ",") + std::string(name);
  return out;
}

std::string to_json(const edit_list& edits) {
  auto list = nlohmann::ordered_json::array();
  for (auto& e : edits) {
    nlohmann::ordered_json item;
    item["kind"] = to_string(e.kind);
    item["target"] = e.target;
    if (uses_anchor(e.kind)) item["anchor"] = e.anchor;
    if (uses_operand(e.kind)) item["operand"] = e.operand;
    if (e.kind == edit_kind::swap_operands) item["operand2"] = e.operand2;
    item["seed"] = std::to_string(e.seed);
    list.push_back(std::move(item));
  }
  nlohmann::ordered_json doc;
  doc["edits"] = std::move(list);
  return doc.dump();
}

edit_list edit_list_from_json(const std::string& text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("edit list '" + text.substr(0, 80) + "' is not JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("edits") || !doc["edits"].is_array())
    throw std::invalid_argument("edit list '" + text.substr(0, 80) +
                                "': expected an object {\"edits\": [...]} as written by tune-engine");
  edit_list edits;
  for (auto& item : doc["edits"]) {
    if (!item.is_object()) throw std::invalid_argument("edit " + item.dump() + ": each edit must be an object");
    auto kind_it = item.find("kind");
    std::optional<edit_kind> kind;
    if (kind_it != item.end() && kind_it->is_string()) kind = edit_kind_from_string(kind_it->get<std::string>());
    if (!kind)
      throw std::invalid_argument("edit " + item.dump() +
                                  ": field 'kind' must be one of copy, delete, move, swap, replace");
    program_edit e;
    e.kind = *kind;
    e.target = read_index(item, "target");
    if (uses_anchor(e.kind)) e.anchor = read_index(item, "anchor");
    if (uses_operand(e.kind)) e.operand = read_index(item, "operand");
    if (e.kind == edit_kind::swap_operands) e.operand2 = read_index(item, "operand2");
    auto seed = item.find("seed");
    try {
      if (seed == item.end() || !seed->is_string()) throw std::invalid_argument("");
      std::size_t used = 0;
      auto text_seed = seed->get<std::string>();
      e.seed = std::stoull(text_seed, &used);
      if (used != text_seed.size() || text_seed.empty() || text_seed[0] == '-') throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("edit " + item.dump() +
                                  ": field 'seed' must be a decimal string of an unsigned 64-bit number");
    }
    edits.push_back(e);
  }
  return edits;
}

std::string describe(const program_edit& e) {
  std::string text(to_string(e.kind));
  text += " %" + std::to_string(e.target);
  if (uses_anchor(e.kind)) text += " before %" + std::to_string(e.anchor);
  if (e.kind == edit_kind::swap_operands)
    text += " operands " + std::to_string(e.operand) + " and " + std::to_string(e.operand2);
  if (e.kind == edit_kind::replace_operand) text += " operand " + std::to_string(e.operand);
  return text + " (seed " + std::to_string(e.seed) + ")";
}

configuration encode(const edit_list& edits) {
  configuration config;
  config.reserve(edits.size() * words_per_edit);
  for (auto& e : edits) {
    config.push_back(static_cast<std::uint64_t>(e.kind));
    config.push_back(e.target);
    config.push_back(e.anchor);
    config.push_back(static_cast<std::uint64_t>(e.operand) | (static_cast<std::uint64_t>(e.operand2) << 32));
    config.push_back(e.seed);
  }
  return config;
}

edit_list decode(const configuration& config) {
  if (config.size() % words_per_edit != 0)
    throw std::invalid_argument("an encoded edit list has " + std::to_string(config.size()) +
                                " words, not a multiple of 5");
  edit_list edits;
  for (std::size_t i = 0; i < config.size(); i += words_per_edit) {
    if (config[i] > static_cast<std::uint64_t>(edit_kind::replace_operand) || config[i + 1] > UINT32_MAX ||
        config[i + 2] > UINT32_MAX)
      throw std::invalid_argument("encoded edit " + std::to_string(i / words_per_edit) + " is out of range");
    program_edit e;
    e.kind = static_cast<edit_kind>(config[i]);
    e.target = static_cast<std::uint32_t>(config[i + 1]);
    e.anchor = static_cast<std::uint32_t>(config[i + 2]);
    e.operand = static_cast<std::uint32_t>(config[i + 3] & UINT32_MAX);
    e.operand2 = static_cast<std::uint32_t>(config[i + 3] >> 32);
    e.seed = config[i + 4];
    edits.push_back(e);
  }
  return edits;
}

program_edit random_edit(const program_outline& outline, rng_type& rng, edit_kind_set allowed) {
  std::vector<std::size_t> movable, with_operand, with_two;
  for (std::size_t i = 0; i < outline.instructions.size(); ++i) {
    auto& inst = outline.instructions[i];
    if (inst.movable) movable.push_back(i);
    if (inst.operands >= 1) with_operand.push_back(i);
    if (inst.operands >= 2) with_two.push_back(i);
  }
  std::vector<edit_kind> kinds;
  auto offer = [&](edit_kind kind, bool possible) {
    if (possible && (allowed & edit_kind_bit(kind))) kinds.push_back(kind);
  };
  offer(edit_kind::copy, !movable.empty());
  offer(edit_kind::remove, !movable.empty());
  offer(edit_kind::move, !movable.empty());
  offer(edit_kind::swap_operands, !with_two.empty());
  offer(edit_kind::replace_operand, !with_operand.empty());
  if (kinds.empty())
    throw std::invalid_argument("the program has no instruction that an edit of the kinds " + edit_kinds_text(allowed) +
                                " could change");
  auto pick = [&rng](const std::vector<std::size_t>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
  };
  program_edit e;
  e.kind = kinds[std::uniform_int_distribution<std::size_t>(0, kinds.size() - 1)(rng)];
  switch (e.kind) {
    case edit_kind::copy:
    case edit_kind::move:
      e.target = outline.instructions[pick(movable)].id;
      e.anchor =
          outline.instructions[std::uniform_int_distribution<std::size_t>(0, outline.instructions.size() - 1)(rng)].id;
      break;
    case edit_kind::remove:
      e.target = outline.instructions[pick(movable)].id;
      break;
    case edit_kind::swap_operands: {
      auto& inst = outline.instructions[pick(with_two)];
      e.target = inst.id;
      e.operand = std::uniform_int_distribution<std::uint32_t>(0, inst.operands - 1)(rng);
      e.operand2 = std::uniform_int_distribution<std::uint32_t>(0, inst.operands - 2)(rng);
      if (e.operand2 >= e.operand) ++e.operand2;  // a different operand
      break;
    }
    case edit_kind::replace_operand: {
      auto& inst = outline.instructions[pick(with_operand)];
      e.target = inst.id;
      e.operand = std::uniform_int_distribution<std::uint32_t>(0, inst.operands - 1)(rng);
      break;
    }
  }
  e.seed = rng();
  return e;
}

std::pair<edit_list, edit_list> messy_crossover(const edit_list& a, const edit_list& b, rng_type& rng) {
  edit_list all = a;
  all.insert(all.end(), b.begin(), b.end());
  std::shuffle(all.begin(), all.end(), rng);
  auto cut = std::uniform_int_distribution<std::size_t>(0, all.size())(rng);
  return {edit_list(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(cut)),
          edit_list(all.begin() + static_cast<std::ptrdiff_t>(cut), all.end())};
}

namespace {
class edit_list_codec final : public configuration_codec {
 public:
  bool is_valid(const configuration& config) const override {
    try {
      decode(config);
      return true;
    } catch (const std::invalid_argument&) {
      return false;
    }
  }
  std::string to_json(const configuration& config) const override { return tune::to_json(decode(config)); }
  configuration from_json(const std::string& text) const override { return encode(edit_list_from_json(text)); }
};
}  // namespace

search_space_ptr make_edit_list_space(std::string origin) {
  return std::make_shared<const search_space>(std::make_shared<const edit_list_codec>(), std::move(origin));
}

}  // namespace tune
