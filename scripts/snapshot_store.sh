#!/usr/bin/env bash
# scripts/snapshot_store.sh DIR TARBALL [EVERY_S] — a consistent copy of a folder that a running
# cudal1 is writing (its results stores through SQLite's online backup, every other file as it is:
# the stores' seal keys, enrich's files), packed into TARBALL, replaced whole; its paths are
# relative to DIR. With EVERY_S, again every EVERY_S seconds until sent TERM: a device call cut by its
# time limit still returns the last copy, which BENCH_RESTORE or ENRICH_RESTORE puts back on the
# next machine. A store's key must travel with it: a store trusts only rows sealed with its key.
set -uo pipefail
dir=$1 tarball=$2 every=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
snapshot() {
  local tmp db
  tmp=$(mktemp -d) || return 1
  cp -a "$dir"/. "$tmp"/ || { rm -rf "$tmp"; return 1; }
  # Each store again, consistently (the files just copied may be mid-write).
  while IFS= read -r -d '' db; do
    "$here/copy_store.sh" "$dir/${db#"$tmp"/}" "$db" || { rm -rf "$tmp"; return 1; }
  done < <(find "$tmp" -name '*.db' -type f -print0)
  tar -czf "$tarball.part" -C "$tmp" . && mv "$tarball.part" "$tarball"
  local rc=$?
  rm -rf "$tmp"
  return $rc
}
if [ -z "$every" ]; then snapshot; exit; fi
# Stopped (TERM or INT) while copying, it finishes that copy first: killed mid-copy, its tar would
# go on alone and could land after the caller's final copy, or write into the same part file.
stop=0
trap 'stop=1' TERM INT
while [ "$stop" = 0 ]; do
  sleep "$every" &
  wait $! || { kill $! 2>/dev/null; break; }  # a signal ends the wait at once
  [ "$stop" = 0 ] || break
  snapshot || echo "snapshot_store: no copy of $dir this time" >&2
done
