// Process trees as text: status's holder tables, top's tree view and kill's plan draw children
// under their parents, the same way.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace gpuclean::output {

// A row is indented two columns a level up to this many levels; a deeper row stays there and
// says its depth before its command, "[depth 12] ", so that a chain of thousands of processes
// (a user can fork one) is drawn in lines of bounded width: indenting by depth alone drew a
// 3.2 MB plan for a chain of 1,716 (issue 33).
inline constexpr int kTreeLevels = 8;

// The indentation of a row `depth` levels below its tree's root: 2 × min(depth, kTreeLevels)
// spaces.
std::string tree_indent(int depth);

// What a row says before its command: "" up to kTreeLevels, "[depth N] " past it.
std::string depth_mark(int depth);

// `group` in tree order with each holder's depth: a holder whose parent is in the group comes
// after its parent, one level deeper; the others are roots, in the group's order, as are
// siblings. Each holder once, even where the parent links make a cycle (they are read at
// different times: a holder no root reaches becomes a root itself). O(n log n), and no
// recursion: a chain thousands deep must not exhaust the stack.
std::vector<std::pair<const Holder*, int>> tree_order(const std::vector<const Holder*>& group);

}  // namespace gpuclean::output
