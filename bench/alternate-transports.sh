#!/usr/bin/env bash
# Alternating quick bench runs, one per configuration per round, so that drift on the machine
# falls on every configuration alike: `bench/alternate-transports.sh [rounds] [older checkout]`.
# Configurations: this checkout over node:http (SVC_HTTP_SERVER=node, the default), this checkout
# over Bun.serve (SVC_HTTP_SERVER=bun), and, when a second folder is given (e.g. a
# `git worktree add` of an earlier commit with node_modules linked in), that checkout as it is.
# Prints each run's saturation line; the whole tables are in bench/results/ and in $out.
set -u
cd "$(dirname "$0")/.."
rounds="${1:-2}"
older="${2:-}"
out="$(mktemp -d)"
configs=(node bun)
[ -n "$older" ] && configs=(older node bun)
for round in $(seq 1 "$rounds"); do
  for cfg in "${configs[@]}"; do
    if [ "$cfg" = older ]; then
      (cd "$older" && npx bun bench/run.ts --quick >"$out/$cfg-$round.log" 2>&1)
    else
      SVC_HTTP_SERVER="$cfg" npx bun bench/run.ts --quick >"$out/$cfg-$round.log" 2>&1
    fi
    printf '%-6s round %s: %s\n' "$cfg" "$round" \
      "$(grep -E '│ 2 │ saturation' "$out/$cfg-$round.log" | awk -F'│' '{print $5 "|" $7}' | tr -s ' ')"
  done
done
echo "logs: $out"
