#!/usr/bin/env bash
# What a checkpoint restore costs the daemons: starts `strata up --data DATA` with the flags
# given (a new or stopped data directory), writes fio's checkpoint (bench/fio/checkpoint-save.fio,
# 4 writers x 256 MiB) through the mount, then reads it back ROUNDS times cold
# (bench/fio/checkpoint-restore.fio, the page cache dropped before each). For the save and for
# each restore: its rate, then, for the mount and for the storage nodes together, the CPU seconds (user, system), the
# seconds the JIT compilers spent compiling (HotSpot's java.ci.totalTime) and the Java threads
# started (java.threads.started, which counts native threads attached to the JVM too) during it.
# The first restore is also when the JVMs compile the read path.
# Stops the cluster at the end. Needs root (drop_caches), fio and a JDK's jcmd.
#
#   bench/probe/restore-cpu.sh DATA ROUNDS [strata up flags, e.g. --no-l1 --fuse libfuse3]
set -euo pipefail
D=$1; ROUNDS=$2; shift 2
H="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=/dev/null
. "$H/bin/jdk.sh"
"$H/bin/strata" up --data "$D" "$@" > "$D.up.log" 2>&1 || { tail -5 "$D.up.log" >&2; exit 1; }
D=$(cd "$D" && pwd)
trap '"$H/bin/strata" down --data "$D" >/dev/null 2>&1 || true' EXIT
TICK=$(getconf CLK_TCK)
pid() { grep -h '^pid' "$D/$1/ready.properties" | cut -d= -f2; }
snap() { # one line per daemon: name utime stime threads-started compile-seconds
  for x in mount storage-1 storage-2 storage-3; do
    p=$(pid "$x")
    echo "$x $(awk '{print $14, $15}' "/proc/$p/stat") $("$JAVA_HOME/bin/jcmd" "$p" PerfCounter.print | awk -F= '
      /^java.threads.started=/ {n = $2} /^java.ci.totalTime=/ {c = $2} /^sun.os.hrt.frequency=/ {f = $2}
      END {printf "%d %.3f", n, c / f}')"
  done
}
fio_env() { env FIO_DIR="$D/mnt/ckpt" FIO_WRITERS=4 FIO_SHARD=256M "$@"; }
mkdir -p "$D/mnt/ckpt"
report() { # the difference between snapshots $1 and $2, mount and storage nodes
  paste "$1" "$2" | awk -v t="$TICK" '{
    u = ($7 - $2) / t; s = ($8 - $3) / t; n = $9 - $4; c = $10 - $5
    if ($1 == "mount") printf "  mount:         user %.2f s, system %.2f s, compiling %.2f s, %d threads started\n", u, s, c, n
    else { su += u; ss += s; sc += c; sn += n }
  } END { printf "  storage nodes: user %.2f s, system %.2f s, compiling %.2f s, %d threads started\n", su, ss, sc, sn }'
}
snap > "$D.cpu.a"
fio_env fio "$H/bench/fio/checkpoint-save.fio" | grep -oE 'WRITE: bw=[^,]+' | sed 's/^/save: /'
snap > "$D.cpu.b"
report "$D.cpu.a" "$D.cpu.b"
for r in $(seq 1 "$ROUNDS"); do
  sync; echo 3 > /proc/sys/vm/drop_caches
  snap > "$D.cpu.a"
  rate=$(fio_env fio "$H/bench/fio/checkpoint-restore.fio" | grep -oE 'READ: bw=[^,]+')
  snap > "$D.cpu.b"
  echo "restore $r: $rate"
  report "$D.cpu.a" "$D.cpu.b"
done
rm -f "$D.cpu.a" "$D.cpu.b"
