// The field -> flag maps the commands declared (commands.hpp).
#include <map>
#include <string>

#include "commands.hpp"

namespace tune::cli {
namespace {
std::map<std::string, std::map<std::string, std::string>>& declared() {
  static std::map<std::string, std::map<std::string, std::string>> maps;
  return maps;
}
}  // namespace

void declare_option_names(const std::string& command, const std::map<std::string, std::string>& names) {
  declared()[command] = names;
}

const std::map<std::string, std::string>& declared_option_names(const std::string& command) {
  static const std::map<std::string, std::string> none;
  auto it = declared().find(command);
  return it == declared().end() ? none : it->second;
}

}  // namespace tune::cli
