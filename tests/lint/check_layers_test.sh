#!/usr/bin/env bash
# scripts/check_layers.py fails on what it is there to catch: on a copy of src/ and
# docs/design.md, the checker passes as the tree stands (the control), then fails on each
# planted violation: an include of a layer the table does not allow, a system header in a pure
# layer, a folder the table does not name; a table it cannot read is exit 2, not a pass.
#   tests/lint/check_layers_test.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source "$repo/tests/lib/checks.sh"
work_dir

fresh() { # a copy of the tree as it stands
  rm -rf "$work/src" "$work/design.md"
  cp -r "$repo/src" "$work/src"
  cp "$repo/docs/design.md" "$work/design.md"
}
layers() { python3 "$repo/scripts/check_layers.py" --design "$work/design.md" --src "$work/src"; }
status_is() { # CODE: the checker exits with CODE; its output kept in $work/out
  local code=0
  layers >"$work/out" 2>&1 || code=$?
  [ "$code" = "$1" ]
}
says() { grep -q -- "$1" "$work/out"; }

fresh
check "the tree as it stands keeps to the table" status_is 0

printf '#include "cli/common.h"\n' >>"$work/src/diagnose/kill_check.cpp"
check "diagnose/ including cli/ fails" status_is 1
check "  naming the file, the line and the layer" \
  says 'src/diagnose/kill_check.cpp:[0-9]*: diagnose/ includes cli/common.h: cli/ is not among'

fresh
printf '#include "top/session.h"\n' >>"$work/src/collect/gather.h"
check "collect/ including top/ (a layer above it) fails" status_is 1

fresh
printf '#include <unistd.h>\n' >>"$work/src/output/kill_view.cpp"
check "a system header in output/ (pure) fails" status_is 1
check "  saying why" says 'output/ is pure and includes <unistd.h>'
fresh
printf '#include <unistd.h>\n' >>"$work/src/ops/signals.cpp"
check "the same header in ops/ (not pure) passes" status_is 0

fresh
mkdir "$work/src/gadgets"
printf 'int x;\n' >"$work/src/gadgets/x.cpp"
check "a folder the table does not name fails" status_is 1
check "  naming it" says 'src/gadgets/: a folder the layer table'

fresh
# shellcheck disable=SC2016 # backquotes of Markdown, not a command
sed -i 's/^| `cli\/` |.*$/| `cli\/` | the shell | `core`, `nosuch` |/' "$work/design.md"
check "a table naming an unknown layer is exit 2" status_is 2
fresh
sed -i 's/^## Architecture$/## Something else/' "$work/design.md"
check "no table at all is exit 2" status_is 2

finish "layer check test"
