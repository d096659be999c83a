// The three generators of `gpuclean completion SHELL`, one file each (bash.cpp, zsh.cpp,
// fish.cpp): the whole script for `model`, ready to print.
#pragma once

#include <string>

#include "completion/model.h"

namespace gpuclean::completion {

std::string bash_script(const Model& model);
std::string zsh_script(const Model& model);
std::string fish_script(const Model& model);

}  // namespace gpuclean::completion
