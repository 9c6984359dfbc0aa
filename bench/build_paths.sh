#!/usr/bin/env bash
# bench/build_paths.sh CUDAL1 OUT_DIR CANDIDATE... — the build service's two paths side by side
# on the same candidates, in one run: torch's own commands (plain) and the fast path
# (precompiled torch header, device code split from host code), each into a fresh cache, then
# the fast cache asked again (every module a hit). The precompiled headers are built once,
# before the fast builds, and reported on their own: a one-time cost per toolchain.
# env: DEVICE (cpu; cuda for CUDA candidates), PYTHON (interpreter with torch), ARCH
# (TORCH_CUDA_ARCH_LIST for CUDA code, e.g. 9.0), JOBS (compilers at once; 0 = all cores).
set -uo pipefail
cudal1=${1:?usage: build_paths.sh CUDAL1 OUT_DIR CANDIDATE...}
out=${2:?usage: build_paths.sh CUDAL1 OUT_DIR CANDIDATE...}
shift 2
[ $# -gt 0 ] || { echo "name at least one candidate file" >&2; exit 2; }
mkdir -p "$out"
rm -rf "$out/plain" "$out/fast"
args=(--device "${DEVICE:-cpu}" --jobs "${JOBS:-0}" --json)
[ -n "${PYTHON:-}" ] && args+=(--python "$PYTHON")
[ -n "${ARCH:-}" ] && args+=(--arch "$ARCH")

build() {  # $1 label, $2 cache, $3 candidate, rest: extra flags
  local label=$1 cache=$2 cand=$3
  shift 3
  local line
  line=$("$cudal1" build "$cand" --cache "$cache" "${args[@]}" "$@" 2>>"$out/stderr.log") ||
    line='{"kind":"error","modules":[],"seconds":0}'
  printf '{"label":"%s","candidate":"%s","outcome":%s}\n' "$label" "$cand" "$line" >>"$out/builds.jsonl"
}

: >"$out/builds.jsonl"
for c in "$@"; do build plain "$out/plain" "$c" --no-fast; done
# The headers: one build with the fast path starts them and waits for them at exit.
start=$SECONDS
"$cudal1" build "$1" --cache "$out/fast" "${args[@]}" >/dev/null 2>>"$out/stderr.log"
pch_s=$((SECONDS - start))
rm -rf "$out/fast/modules"  # keep the headers, not the module that started them
for c in "$@"; do build fast "$out/fast" "$c"; done
for c in "$@"; do build hit "$out/fast" "$c"; done

python3 - "$out/builds.jsonl" "$pch_s" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    mods = r["outcome"].get("modules", [])
    # plain, fast: the modules' compile seconds; hit: the whole call (capture included)
    secs = (r["outcome"].get("seconds") if r["label"] == "hit" else sum(m.get("seconds", 0) for m in mods)) if mods else None
    paths = ",".join(sorted({m.get("path", "?") for m in mods})) or r["outcome"].get("kind", "?")
    by.setdefault(r["candidate"], {})[r["label"]] = (secs, paths, r["outcome"].get("kind"))
print(f"{'candidate':44} {'plain s':>8} {'fast s':>8} {'hit s':>6}  fast path taken")
pl, fa, hi = [], [], []
for cand, d in by.items():
    p, f, h = (d.get(k, (None, "", "")) for k in ("plain", "fast", "hit"))
    cell = lambda v: f"{v[0]:8.1f}" if v[0] is not None else f"{'-':>8}"
    print(f"{cand.split('/')[-1][:44]:44} {cell(p)} {cell(f)} {cell(h)[-6:]}  {f[1]} ({f[2]})")
    if p[0] and f[0]:
        pl.append(p[0]); fa.append(f[0])
    if h[0] is not None:
        hi.append(h[0])
if pl:
    mp, mf = statistics.median(pl), statistics.median(fa)
    print(f"\nmodules built both ways: {len(pl)}; median plain {mp:.1f} s, fast {mf:.1f} s "
          f"({mp / mf:.1f}x); a candidate whose modules are all cached: median {statistics.median(hi):.1f} s (capture included); "
          f"precompiled headers (once per toolchain) {sys.argv[2]} s")
PY
