#!/usr/bin/env bash
# Alternating pinned runs of keyed decide on the h1 transport in several checkouts, so drift on
# the machine falls on each alike (server on CPU 0, wrk on CPU 1; bench/pinned.ts):
#   bench/alternate-pinned.sh ROUNDS DIR [DIR]...
# DIR is a checkout (e.g. a `git worktree add` of an earlier commit with node_modules linked in).
# Prints each run's svc row (req/s, share of the ceiling, server CPU per request, p50/p99 at
# 5,000 req/s) and the ceiling's req/s.
set -u
rounds="${1:?usage: bench/alternate-pinned.sh ROUNDS DIR [DIR]...}"
shift
[ $# -gt 0 ] || { echo "usage: bench/alternate-pinned.sh ROUNDS DIR [DIR]..." >&2; exit 2; }
out="$(mktemp -d)"
for round in $(seq 1 "$rounds"); do
  for dir in "$@"; do
    name="$(cd "$dir" && git rev-parse --short HEAD)"
    log="$out/$name-$round.log"
    (cd "$dir" && npx bun bench/run.ts --pin --quick --transports h1 --rounds 2 >"$log" 2>&1)
    printf '%-10s round %s: %s ceiling %s\n' "$name" "$round" \
      "$(grep '^| svc' "$log")" "$(grep '^| bare Bun.serve' "$log" | cut -d'|' -f3 | tr -d ' ')"
  done
done
echo "logs: $out"
