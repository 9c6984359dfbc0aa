#!/usr/bin/env bash
# scripts/gpu_memory_log.sh FILE [EVERY_S] — who holds the GPUs' memory, every EVERY_S seconds
# (default 15) until sent TERM or INT, one line per sample appended to FILE: the time, each
# device's used and total MiB, and the processes holding the most, by role (a cudal1 worker's
# reference or candidate, the build service, anything else named by its command). A lane that
# dies of "CUDA error: out of memory" while starting is then explained by what held the device.
set -uo pipefail
file=$1 every=${2:-15}
command -v nvidia-smi >/dev/null || { echo "gpu_memory_log: no nvidia-smi here" >>"$file"; exit 0; }
role() {  # a short name for a pid's command
  local args
  args=$({ tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null) || { echo "gone"; return; }
  case "$args" in
    *cudal1_worker.py\ reference*) echo "reference" ;;
    *cudal1_worker.py\ candidate*) echo "candidate" ;;
    *cudal1_worker.py*) echo "worker" ;;
    *) set -- $args; echo "${1:-?}" | sed 's|.*/||' ;;
  esac
}
sample() {
  local line devices procs pid mib
  devices=$(nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits 2>/dev/null |
    awk -F', *' '{printf "%sgpu%s %s/%s MiB", (NR > 1 ? "; " : ""), $1, $2, $3}')
  procs=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | sort -t, -k2 -nr)
  line="$(date +%T) $devices; $(printf '%s\n' "$procs" | grep -c .) processes"
  local shown=0
  while IFS=', ' read -r pid mib; do
    [ -n "$pid" ] || continue
    [ "$shown" -lt 8 ] || break
    line+=" $(role "$pid"):$pid:$mib"
    shown=$((shown + 1))
  done <<<"$procs"
  echo "$line" >>"$file"
}
stop=0
trap 'stop=1' TERM INT
while [ "$stop" = 0 ]; do
  sample
  [ "$stop" = 0 ] || break  # told to stop while nvidia-smi ran: no last sleep
  sleep "$every" &
  wait $! 2>/dev/null
done
