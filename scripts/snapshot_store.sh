#!/usr/bin/env bash
# scripts/snapshot_store.sh DIR TARBALL [EVERY_S] — a consistent copy of a folder that a running
# cudal1 is writing (its results stores through SQLite's online backup, every other file as it is:
# the stores' seal keys, enrich's files), packed into TARBALL, replaced whole; its paths are
# relative to DIR. With EVERY_S, again every EVERY_S seconds until killed: a device call cut by its
# time limit still returns the last copy, which BENCH_RESTORE or ENRICH_RESTORE puts back on the
# next machine. A store's key must travel with it: a store trusts only rows sealed with its key.
set -uo pipefail
dir=$1 tarball=$2 every=${3:-}
snapshot() {
  local tmp db
  tmp=$(mktemp -d) || return 1
  cp -a "$dir"/. "$tmp"/ || { rm -rf "$tmp"; return 1; }
  # A copied write-ahead log would be replayed over the backup: only the backup stands.
  find "$tmp" \( -name '*.db-wal' -o -name '*.db-shm' \) -delete
  while IFS= read -r -d '' db; do
    python3 -c 'import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close(); src.close()' "$dir/${db#"$tmp"/}" "$db" || { rm -rf "$tmp"; return 1; }
  done < <(find "$tmp" -name '*.db' -type f -print0)
  tar -czf "$tarball.part" -C "$tmp" . && mv "$tarball.part" "$tarball"
  local rc=$?
  rm -rf "$tmp"
  return $rc
}
if [ -z "$every" ]; then snapshot; exit; fi
while sleep "$every"; do snapshot || echo "snapshot_store: no copy of $dir this time" >&2; done
