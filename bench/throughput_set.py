#!/usr/bin/env python3
"""bench/throughput_set.py SRC.jsonl DST.jsonl [STRIDE] — a throughput set from a CUDA-L1 file.

Keeps every STRIDE-th (default 8) row that has a custom_code, so the set spans all three levels
instead of level 1's first tasks, and says how many of the kept rows call load_inline (the
throughput benchmark wants at least a third of its candidates to build). The output is small
enough to carry to a device machine beside the binaries; bench/throughput.sh takes it as
CUDA_L1_JSONL."""
import json
import sys


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    stride = int(sys.argv[3]) if len(sys.argv) == 4 else 8
    rows = [line for line in open(src) if (json.loads(line).get("custom_code") or "None") != "None"]
    kept = rows[::stride]
    with open(dst, "w") as f:
        f.writelines(kept)
    builds = sum("load_inline" in json.loads(r)["custom_code"] for r in kept)
    levels = sorted({json.loads(r)["level_id"] for r in kept})
    print(f"{len(kept)} rows of {len(rows)} with a custom_code (levels {levels}), {builds} call load_inline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
