#!/usr/bin/env zsh
# Drives real zsh completion (compinit, the generated _gpuclean) in an interactive zsh on a
# pseudo-terminal (zsh/zpty), and prints the candidates offered for each LINE, one per line
# after a "== LINE" header. compadd is wrapped to record what the completion functions add
# (the technique of zsh-capture-completion).
#   zsh -f tests/completion/zsh_complete.zsh SCRIPT LINE...
#   SCRIPT: the output of `gpuclean completion zsh`, sourced after compinit; or a directory
#   holding it as _gpuclean, put on $fpath for compinit to autoload (the installed way).
#   gpuclean must be on PATH.
emulate -L zsh
zmodload zsh/zpty || exit 2
script=$1
shift
out=$(mktemp -d) || exit 2
trap 'zpty -d comp 2>/dev/null; rm -rf $out' EXIT
zpty comp zsh -f -i
zpty -w comp "PROMPT='' RPROMPT=''; unsetopt beep zle_bell 2>/dev/null"
if [[ -d $script ]]; then
  zpty -w comp "fpath=(${(q)script} \$fpath); autoload -Uz compinit && compinit -u -d $out/zcompdump"
else
  zpty -w comp "autoload -Uz compinit && compinit -u -d $out/zcompdump; source ${(q)script}"
fi
zpty -w comp 'compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi
  local -a __hits; builtin compadd -A __hits "$@"; local r=$?
  (( $#__hits )) && print -rl -- $__hits >> $__comp_out
  builtin compadd "$@"
}'
zpty -w comp "zstyle ':completion:*' list-prompt ''; zstyle ':completion:*' menu no; zstyle ':completion:*' insert-unambiguous false; LISTMAX=10000"
# TAB completes, then says so on the terminal: keys sent before the completion ends would
# interrupt it (typeahead), so each line waits for that word.
zpty -w comp '__comp_widget() { zle complete-word; zle -M "comp""leted-$__comp_n"; }; zle -N __comp_widget; bindkey "^I" __comp_widget'
n=0
for line in "$@"; do
  (( n++ ))
  # "sta""rted": the echo of what is typed does not match, only the shell's answer does.
  zpty -w comp "__comp_out=$out/$n; __comp_n=$n; : > $out/$n; print -r -- sta''rted-$n"
  zpty -r -m comp buf "*started-$n*" || exit 2
  zpty -w -n comp "$line"$'\t'
  zpty -r -m comp buf "*completed-$n*" || exit 2
  zpty -w -n comp $'\C-e\C-u'   # end of line, then clear it
  zpty -w comp "print -r -- do''ne-$n"
  zpty -r -m comp buf "*done-$n*" || exit 2
  print -r -- "== $line"
  sort -u $out/$n
done
