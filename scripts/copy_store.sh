#!/usr/bin/env bash
# scripts/copy_store.sh SRC DST — a consistent copy of the results store SRC, which a running
# cudal1 may be writing (SQLite's online backup: rows still in its write-ahead log included), at
# DST with SRC's seal key beside it (a store trusts only rows sealed with its own key) and SRC's
# file mode (stores are private). DST appears whole or not at all.
set -euo pipefail
src=$1 dst=$2
python3 -c 'import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.close(); src.close()' "$src" "$dst.part"
chmod --reference="$src" "$dst.part"
cp -p "$src.key" "$dst.key"
rm -f "$dst-wal" "$dst-shm"  # an older store's log would be replayed over the copy
mv "$dst.part" "$dst"
