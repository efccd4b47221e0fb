# bash completion for bpfscope                             -*- shell-script -*-
# Completes bpfscope's options (read from `bpfscope --help`), a tool's options
# (from `bpfscope TOOL -h`), the tool names, and probe names, which
# `bpfscope -l` lists: tracepoint:CATEGORY: then tracepoint:CATEGORY:EVENT,
# software:, rawtracepoint:, iter:...
# Generated from completions/bpfscope.bash by the build (the tool names).

_bpfscope_tools="@BPFSCOPE_TOOL_NAMES@"

# The options a usage text ("$@" prints it) declares: the words starting with
# - at the head of its entries ("-o, --output FILE", "-p, --pid=PID").
_bpfscope_options() {
  "$@" 2>/dev/null | awk '/^ +-/ {
    for (i = 1; i <= NF; i++) {
      w = $i; sub(/,$/, "", w); sub(/=.*/, "", w)
      if (w !~ /^--?[A-Za-z0-9]/) break
      print w
    }
  }'
}

# Probe names, or the next part of one, that start with WORD (BIN -l lists them).
_bpfscope_probe_words() {
  local bin=$1 word=$2 type rest
  case $word in
    *:*) ;;
    *)
      compgen -W "tracepoint: rawtracepoint: software: hardware: interval: profile: iter: uprobe: usdt: kprobe: fentry: BEGIN END" -- "$word"
      return ;;
  esac
  type=${word%%:*} rest=${word#*:}
  case $type in
    tracepoint)
      if [[ $rest == *:* ]]; then
        "$bin" -l "$word*" 2>/dev/null
      else
        # The categories first: tracepoint:sched:
        "$bin" -l "tracepoint:$rest*:*" 2>/dev/null | cut -d: -f1-2 | sort -u | sed 's/$/:/'
      fi ;;
    rawtracepoint|software|hardware|iter|kprobe|interval|profile)
      "$bin" -l "$word*" 2>/dev/null ;;
  esac
}

_bpfscope() {
  local bin=${COMP_WORDS[0]}
  local line=${COMP_LINE:0:COMP_POINT}
  # The word being typed, whole: bash splits it at ':' (COMP_WORDBREAKS).
  local cur=${line##*[[:space:]]}
  local -a words
  read -ra words <<<"${line:0:${#line}-${#cur}}"
  local prev=${words[${#words[@]}-1]}
  local tool="" i
  for ((i = 1; i < ${#words[@]}; i++)); do
    case ${words[i - 1]} in
      -o | --output | -f | --format | -B | -d | -c | --cmd | -p | --flamegraph | --heatmap | --title | --prometheus | \
        --prometheus-token | --max-series | --mode | --probe-filter | --include | -e) continue ;;
    esac
    if [[ " $_bpfscope_tools " == *" ${words[i]} "* ]]; then
      tool=${words[i]}
      break
    fi
  done
  COMPREPLY=()
  case $prev in
    -o | --output | --flamegraph | --heatmap | --prometheus-token | --include)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return ;;
    -f | --format) mapfile -t COMPREPLY < <(compgen -W "text json record folded" -- "$cur"); return ;;
    -B) mapfile -t COMPREPLY < <(compgen -W "line full none" -- "$cur"); return ;;
    -d) mapfile -t COMPREPLY < <(compgen -W "ast sema ir regalloc bpf verifier all" -- "$cur"); return ;;
    --mode) mapfile -t COMPREPLY < <(compgen -W "bench codegen" -- "$cur"); return ;;
    -p | --pid)
      mapfile -t COMPREPLY < <(compgen -W "$(cd /proc && echo [0-9]*)" -- "$cur")
      return ;;
    -c | --cmd)
      mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      return ;;
    -e | --title | --prometheus | --max-series | --probe-filter) return ;;
  esac
  if [[ $cur == *:* || $prev == -l || $prev == --list ]]; then
    mapfile -t COMPREPLY < <(_bpfscope_probe_words "$bin" "$cur")
  elif [[ $cur == -* ]]; then
    if [[ -n $tool ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$(_bpfscope_options "$bin" "$tool" -h) $(_bpfscope_options "$bin" --help)" -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -W "$(_bpfscope_options "$bin" --help)" -- "$cur")
    fi
  elif [[ -z $tool ]]; then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -W "$_bpfscope_tools tools render serve" -- "$cur"; compgen -f -- "$cur")
  else
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
  # A name ending in ':' goes on (tracepoint:sched:...); bash's word starts
  # after the last ':' of the one typed.
  if [[ ${COMPREPLY[0]-} == *: ]]; then compopt -o nospace 2>/dev/null; fi
  if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
    local colon_prefix=${cur%"${cur##*:}"}
    COMPREPLY=("${COMPREPLY[@]#"$colon_prefix"}")
  fi
}
complete -F _bpfscope bpfscope
