#!/usr/bin/env bash
# Copyright 2026 remote_inference contributors
# Licensed under the Apache License, Version 2.0.
#
# A benchmark on two revisions of src/, alternated in one run so both meet the same machine:
#
#   bench/side_by_side.sh BEFORE [ROUNDS] -- NAME [ARGS...] [-- NAME [ARGS...]]...
#   bench/side_by_side.sh 2110757 2 -- multi_robot --seconds 6 --counts 4 --no-write
#
# A worktree of HEAD in a temporary folder is set up once (./run setup; its colcon install
# links to its src/), then each round runs every benchmark after `git checkout BEFORE -- src`
# and after `git checkout HEAD -- src`, printing each output under a `## round-side NAME`
# heading. Only src/ alternates: the benchmarks, tests and interfaces are HEAD's, so BEFORE
# must speak the same messages. The worktree is removed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 3 ] || { sed -n 4,13p "$0" >&2; exit 2; }
BEFORE=$(git -C "$ROOT" rev-parse --verify "$1^{commit}")
shift
ROUNDS=1
if [ "$1" != -- ]; then ROUNDS=$1; shift; fi
[ "$1" = -- ] || { echo "side_by_side: expected -- before the first benchmark" >&2; exit 2; }
shift
BENCHES=()
current=
for word in "$@"; do
  if [ "$word" = -- ]; then BENCHES+=("$current"); current=; else current+="${current:+ }$word"; fi
done
[ -n "$current" ] && BENCHES+=("$current")
AFTER=$(git -C "$ROOT" rev-parse HEAD)
TREE=$(mktemp -d /tmp/side_by_side.XXXXXX)
trap 'git -C "$ROOT" worktree remove --force "$TREE" >/dev/null 2>&1 || true' EXIT
git -C "$ROOT" worktree add -q --detach "$TREE" "$AFTER"
(cd "$TREE" && ./run setup >/dev/null)
echo "# side by side: before ${BEFORE:0:7}, after ${AFTER:0:7}, $ROUNDS round(s), $(date -u +%FT%TZ)"
for round in $(seq 1 "$ROUNDS"); do
  for side in before after; do
    revision=$BEFORE
    [ "$side" = after ] && revision=$AFTER
    git -C "$TREE" checkout -q "$revision" -- src
    for bench in "${BENCHES[@]}"; do
      echo "## $round-$side $bench (load $(cut -d' ' -f1 /proc/loadavg))"
      # shellcheck disable=SC2086 - a benchmark's words, split on purpose
      (cd "$TREE" && ./run bench $bench)
    done
  done
done
