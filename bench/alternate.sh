#!/usr/bin/env bash
# Alternating quick bench runs of several configurations, one per configuration per round, so
# that drift on the machine falls on every configuration alike:
#   bench/alternate.sh ROUNDS DIR ENV [DIR ENV]...
# DIR is a checkout (e.g. a `git worktree add` of an earlier commit with node_modules linked in);
# ENV is one VAR=value passed to that run (`-` for none), e.g.
#   bench/alternate.sh 2 /tmp/wt-old - . SVC_RUNTIME_THREADS=idle . SVC_RUNTIME_THREADS=normal
# Prints each run's saturation line; the whole logs are in the folder it names at the end.
set -u
rounds="${1:?usage: bench/alternate.sh ROUNDS DIR ENV [DIR ENV]...}"
shift
[ $(($# % 2)) -eq 0 ] && [ $# -gt 0 ] || { echo "usage: bench/alternate.sh ROUNDS DIR ENV [DIR ENV]..." >&2; exit 2; }
configs=("$@")
out="$(mktemp -d)"
for round in $(seq 1 "$rounds"); do
  for ((i = 0; i < ${#configs[@]}; i += 2)); do
    dir="${configs[i]}"
    setting="${configs[i + 1]}"
    name="$(cd "$dir" && git rev-parse --short HEAD)$([ "$setting" = - ] || echo " $setting")"
    log="$out/$((i / 2))-$round.log"
    if [ "$setting" = - ]; then
      (cd "$dir" && npx bun bench/run.ts --quick >"$log" 2>&1)
    else
      (cd "$dir" && env "$setting" npx bun bench/run.ts --quick >"$log" 2>&1)
    fi
    printf '%-40s round %s: %s\n' "$name" "$round" \
      "$(grep -E '│ +2 │ saturation' "$log" | awk -F'│' '{print $5 "|" $7}' | tr -s ' ')"
  done
done
echo "logs: $out"
