// The first argument of vtrain and dittrain is a CONFIG or one of the
// program's commands (`vtrain pack`, `dittrain sample`); veval takes only
// commands. A mistyped command (`vtrain pakc cifar10_vit_tiny_siamese ...`)
// would otherwise be read as a CONFIG and the error would be about the next
// word ("argument '...' is not key.path=value"). As git's "did you mean",
// the suggestion is the command nearest by edit distance (Levenshtein, at
// most 2 edits, fewer than the word has letters); ties go to the command
// listed first.
#pragma once
#include <string>
#include <vector>

namespace vt {

// The command nearest to `word` under the rule above; "" when none is.
std::string nearest_command(const std::string& word, const std::vector<std::string>& commands);

// "unknown command 'pakc'; did you mean 'pack'?", or "unknown command
// 'foo' (commands: pack)" when no command is near.
std::string unknown_command_message(const std::string& word, const std::vector<std::string>& commands);

// The message for a first argument `arg` that is a mistyped command, "" when
// it is to be read as a CONFIG: `arg` is no command, no config that
// find_config() finds in `configs_dirs`, no path or override ('/', '.', '=')
// and either near a command or followed by a word without '=' (`rest`, the
// arguments after it: a CONFIG after a command). A config file of that name
// always wins.
std::string mistyped_command(const std::string& arg, const std::vector<std::string>& rest,
                             const std::vector<std::string>& commands, const std::vector<std::string>& configs_dirs);

}  // namespace vt
