#include "core/config_command.h"

#include "core/config.h"
#include "core/config_paths.h"

namespace vt {

std::string nearest_command(const std::string& word, const std::vector<std::string>& commands) {
  std::string best;
  size_t best_d = 3;  // at most 2 edits
  for (const std::string& c : commands) {
    const size_t d = edit_distance(word, c);
    if (d < best_d && d < word.size()) best_d = d, best = c;
  }
  return best;
}

std::string unknown_command_message(const std::string& word, const std::vector<std::string>& commands) {
  const std::string near = nearest_command(word, commands);
  if (!near.empty()) return "unknown command '" + word + "'; did you mean '" + near + "'?";
  std::string list;
  for (const std::string& c : commands) list += (list.empty() ? "" : ", ") + c;
  return "unknown command '" + word + "' (commands: " + list + ")";
}

std::string mistyped_command(const std::string& arg, const std::vector<std::string>& rest,
                             const std::vector<std::string>& commands, const std::vector<std::string>& configs_dirs) {
  for (const std::string& c : commands)
    if (arg == c) return "";
  if (arg.empty() || arg.find_first_of("/.=") != std::string::npos) return "";
  try {
    find_config(arg, configs_dirs);
    return "";  // a config of that name
  } catch (const ConfigError&) {
  }
  const bool config_follows = !rest.empty() && rest[0].find('=') == std::string::npos;
  if (nearest_command(arg, commands).empty() && !config_follows) return "";
  return unknown_command_message(arg, commands);
}

}  // namespace vt
