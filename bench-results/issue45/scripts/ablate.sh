#!/usr/bin/env bash
# Issue 45 item 3: each mechanism with and without it, in alternating runs.
# Each variant is a worktree of the same commit with one mechanism taken out
# (ablate-variants.patch shows each); the bench runs that tree's code, server included.
#   PG, STANDBY-less REDIS: URLs of a throwaway PostgreSQL and Redis.
#   ROUNDS: how many times each variant runs (alternating).
set -euo pipefail
PG=$1 REDIS=$2 ROUNDS=${3:-3} OUT=${4:-bench-results/issue45/runs}
mkdir -p "$OUT"
run() {  # variant, file stem, bench args...
  local variant=$1 stem=$2; shift 2
  PYTHONPATH=/work/abl/$variant/src /work/main/.venv/bin/python -m memstack bench "$@" --out "$OUT/$stem.json" >"$OUT/$stem.log" 2>&1
}
server=(server --postgres-url "$PG" --redis-url "$REDIS" --duration 15 --clients 16)
for round in $(seq 1 "$ROUNDS"); do
  for v in base nohot nots; do run $v "server-$v-$round" "${server[@]}" --workers 2; done
  run base "server-base1-$round" "${server[@]}" --workers 1
  MEMSTACK_PIN_CORES=1 run base "server-pin-$round" "${server[@]}" --workers 1
  for v in base nostated nomemo nokeymap; do
    run $v "recall-$v-$round" recall --stores sqlite --sizes 50000 --queries 200
  done
done
