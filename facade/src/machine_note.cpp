// The CPU's frequency settings recorded with a run, and the note when they
// changed since the task's last run.
#include <filesystem>

#include "report_detail.hpp"
#include "tune/storage/results_db.hpp"

namespace tune::detail {
namespace {

nlohmann::json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

std::string text_of(const nlohmann::json& machine, const char* field) {
  auto found = machine.find(field);
  return found != machine.end() && found->is_string() ? found->get<std::string>() : std::string();
}

}  // namespace

nlohmann::json frequency_json(const cpu_frequency_state& state) {
  return {{"governor", text_or_null(state.governor)},
          {"boost", text_or_null(state.boost)},
          {"max_khz", text_or_null(state.max_khz)}};
}

std::string machine_change_note(const std::string& db_path, const std::string& task_key, const std::string& device_kind,
                                const cpu_frequency_state& now) {
  if (db_path.empty() || !now.known()) return {};
  std::error_code ec;
  if (!storage::is_postgres_target(db_path) && !std::filesystem::is_regular_file(db_path, ec)) return {};
  try {
    storage::results_db db(db_path, storage::results_db::open_mode::read_only);
    std::optional<storage::run_record> last;
    for (auto& run : db.runs())
      if (run.task_key == task_key && run.device_kind == device_kind && (!last || run.id > last->id)) last = run;
    if (!last) return {};
    auto options = nlohmann::json::parse(last->options_json, nullptr, false);
    if (!options.is_object() || !options.contains("measurement") || !options["measurement"].is_object()) return {};
    const auto& machine = options["measurement"].value("machine", nlohmann::json::object());
    if (!machine.is_object()) return {};
    cpu_frequency_state before{text_of(machine, "governor"), text_of(machine, "boost"), text_of(machine, "max_khz")};
    return frequency_change_note(before, last->id, now);
  } catch (const std::exception&) {
    return {};  // the recorder opens it next and says what is wrong
  }
}

}  // namespace tune::detail
