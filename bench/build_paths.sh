#!/usr/bin/env bash
# bench/build_paths.sh CUDAL1 OUT_DIR CANDIDATE... — the build service's paths side by side on
# the same candidates, in one run: torch's own commands (plain), the fast path with g++ only
# (--clang off: g++'s precompiled torch header, device code split from host code) and the fast
# path as it runs by default (clang against its precompiled header where there is a clang), each
# into a fresh cache, then the last cache asked again (every module a hit). The precompiled
# headers are built before the timed fast builds, by building every candidate once, and reported
# on their own: a one-time cost per toolchain and flag set.
# env: DEVICE (cpu; cuda for CUDA candidates), PYTHON (interpreter with torch), ARCH
# (TORCH_CUDA_ARCH_LIST for CUDA code, e.g. 9.0), JOBS (compilers at once; 0 = all cores),
# PLAIN=0 (skip torch's own commands, the slowest: for many candidates on a small machine).
set -uo pipefail
cudal1=${1:?usage: build_paths.sh CUDAL1 OUT_DIR CANDIDATE...}
out=${2:?usage: build_paths.sh CUDAL1 OUT_DIR CANDIDATE...}
shift 2
[ $# -gt 0 ] || { echo "name at least one candidate file" >&2; exit 2; }
mkdir -p "$out"
rm -rf "$out/plain" "$out/fast-gxx" "$out/fast"
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
[ "${PLAIN:-1}" = 0 ] || for c in "$@"; do build plain "$out/plain" "$c" --no-fast; done
# The headers: a build with the fast path starts those it needs and waits for them at exit.
start=$SECONDS
warm() {
  "$cudal1" build "$1" --cache "$out/fast-gxx" --clang off "${args[@]}" >/dev/null 2>>"$out/stderr.log"
  "$cudal1" build "$1" --cache "$out/fast" "${args[@]}" >/dev/null 2>>"$out/stderr.log"
}
running=0
for c in "$@"; do
  warm "$c" &
  running=$((running + 1))
  if [ $running -ge "${WARM_PARALLEL:-4}" ]; then wait -n; running=$((running - 1)); fi
done
wait
pch_s=$((SECONDS - start))
rm -rf "$out/fast-gxx/modules" "$out/fast/modules"  # keep the headers, not the modules that started them
for c in "$@"; do build fast-gxx "$out/fast-gxx" "$c" --clang off; done
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
print(f"{'candidate':40} {'plain s':>8} {'g++ s':>8} {'fast s':>8} {'hit s':>6}  fast path taken")
pl, gx, fa, hi = [], [], [], []
for cand, d in by.items():
    p, g, f, h = (d.get(k, (None, "", "")) for k in ("plain", "fast-gxx", "fast", "hit"))
    cell = lambda v: f"{v[0]:8.1f}" if v[0] is not None else f"{'-':>8}"
    print(f"{cand.split('/')[-1][:40]:40} {cell(p)} {cell(g)} {cell(f)} {cell(h)[-6:]}  {f[1]} ({f[2]})")
    if g[0] and f[0] and (p[0] or not any("plain" in d for d in by.values())):
        pl.append(p[0]); gx.append(g[0]); fa.append(f[0])
    if h[0] is not None:
        hi.append(h[0])
if pl:
    mg, mf = statistics.median(gx), statistics.median(fa)
    mp = statistics.median(pl) if all(pl) else None
    plain = f"median plain {mp:.1f} s ({mp / mf:.1f}x the fast path), " if mp else ""
    print(f"\nmodules built every way: {len(gx)}; {plain}fast with g++ {mg:.1f} s, fast {mf:.1f} s "
          f"({mg / mf:.1f}x faster than g++); max fast {max(fa):.1f} s; a candidate whose modules are all cached: "
          f"median {statistics.median(hi):.1f} s (capture included); precompiled headers (once per toolchain and flags) {sys.argv[2]} s")
PY
