#!/usr/bin/env bash
# Alternating pinned runs of keyed decide on the h1 transport in several checkouts, so drift on
# the machine falls on each alike (server on CPU 0, wrk on CPU 1; bench/pinned.ts):
#   bench/alternate-pinned.sh ROUNDS DIR [DIR]...
# DIR is a checkout (e.g. a `git worktree add` of an earlier commit with node_modules linked in).
# Prints each run's svc row (req/s, share of the ceiling, server CPU per request, p50/p99 at
# 5,000 req/s) and the ceiling's req/s. Every other round runs the checkouts in reverse order:
# on a 2-core machine the second run of a pair has measured slower whichever checkout it was
# (bench/HISTORY.md, "One shape of feature result"), so with an even number of rounds each
# checkout runs first as often as it runs second.
set -u
rounds="${1:?usage: bench/alternate-pinned.sh ROUNDS DIR [DIR]...}"
shift
[ $# -gt 0 ] || { echo "usage: bench/alternate-pinned.sh ROUNDS DIR [DIR]..." >&2; exit 2; }
out="$(mktemp -d)"
# What runs in each checkout; a test stands its own command in for the bench.
run="${ALTERNATE_PINNED_RUN:-npx bun bench/run.ts --pin --quick --transports h1 --rounds 2}"
forward=("$@")
backward=()
for ((i = $# - 1; i >= 0; i--)); do backward+=("${forward[i]}"); done
for round in $(seq 1 "$rounds"); do
  if ((round % 2 == 1)); then order=("${forward[@]}"); else order=("${backward[@]}"); fi
  for dir in "${order[@]}"; do
    # Named by folder and commit, "+" for uncommitted changes: two checkouts of one commit (a
    # change not yet committed against its base) must neither share a name nor a log.
    name="$(basename "$dir")@$(cd "$dir" && git rev-parse --short HEAD)"
    [ -z "$(cd "$dir" && git status --porcelain --untracked-files=no)" ] || name="$name+"
    log="$out/$(echo "$dir" | tr '/' '_')-$round.log"
    (cd "$dir" && bash -c "$run" >"$log" 2>&1)
    printf '%-20s round %s: %s ceiling %s\n' "$name" "$round" \
      "$(grep '^| svc' "$log")" "$(grep '^| bare Bun.serve' "$log" | cut -d'|' -f3 | tr -d ' ')"
  done
done
echo "logs: $out"
