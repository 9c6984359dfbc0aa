#!/usr/bin/env bash
# scripts/snapshot_store.sh STORE_DIR TARBALL [EVERY_S] — a consistent copy of a results store
# that a running cudal1 is writing (every *.db through SQLite's online backup, the other files as
# they are: the seal's key), packed into TARBALL, replaced whole. With EVERY_S, again every EVERY_S
# seconds until killed: a device call cut by its time limit still returns the last copy, which
# BENCH_RESTORE puts back on the next machine.
set -uo pipefail
dir=$1 tarball=$2 every=${3:-}
snapshot() {
  local tmp
  tmp=$(mktemp -d) || return 1
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    case "$f" in
      *.db) python3 -c 'import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close(); src.close()' "$f" "$tmp/$(basename "$f")" || { rm -rf "$tmp"; return 1; }
        chmod --reference="$f" "$tmp/$(basename "$f")" ;;
      *.db-wal | *.db-shm) ;;  # in the backup already
      *) cp -p "$f" "$tmp/" ;;
    esac
  done
  tar -czf "$tarball.part" -C "$tmp" . && mv "$tarball.part" "$tarball"
  rm -rf "$tmp"
}
if [ -z "$every" ]; then snapshot; exit; fi
while sleep "$every"; do snapshot || echo "snapshot_store: no copy of $dir this time" >&2; done
