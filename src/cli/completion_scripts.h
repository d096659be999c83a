// The three generators of `gpuclean completion SHELL`, one file each (completion_bash.cpp,
// completion_zsh.cpp, completion_fish.cpp): the whole script for `model`, ready to print.
#pragma once

#include <string>

#include "cli/completion_model.h"

namespace gpuclean::cli::completion {

std::string bash_script(const Model& model);
std::string zsh_script(const Model& model);
std::string fish_script(const Model& model);

}  // namespace gpuclean::cli::completion
