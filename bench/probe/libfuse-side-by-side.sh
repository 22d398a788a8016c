#!/usr/bin/env bash
# The libfuse2 and the libfuse3 mount of one `strata up` cluster side by side: sequential write
# (dd bs=1M conv=fsync) and cold sequential read (the mount's L1 dropped with `strata cache drop`,
# the page cache with drop_caches), MB/s and FUSE requests per GiB from each mount's
# strata_fuse_request_bytes. Needs root (drop_caches).
#
#   bench/probe/libfuse-side-by-side.sh DATA [MIB] [ROUNDS]
#
# DATA is a running `strata up` data directory: its mount (DATA/mnt, libfuse2 unless its
# mount.toml says otherwise) is the baseline. A second mount of the same cluster, with the same
# config but `fuse = "libfuse3"`, its own L1 and mount point (DATA/mount3, DATA/mnt3), is started
# for the run and unmounted after it. The two alternate, libfuse2 first.
set -euo pipefail
D=$(cd "$1" && pwd); N=${2:-1024}; ROUNDS=${3:-2}
S="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bin/strata"
mkdir -p "$D/mount3" "$D/mnt3"
sed -e '/^fuse = /d' -e 's|^name = "mount"|name = "mount3"|' -e "s|^data = \"$D/mount\"|data = \"$D/mount3\"|" \
    -e "s|^dir = \"$D/mnt\"|dir = \"$D/mnt3\"\nfuse = \"libfuse3\"|" -e 's|^name = "mount-l1"|name = "mount3-l1"|' \
    -e "s|$D/mount/l1-cache|$D/mount3/l1-cache|" "$D/mount/mount.toml" > "$D/mount3/mount3.toml"
rm -f "$D/mount3/ready.properties"
setsid "$S" mount --config "$D/mount3/mount3.toml" > "$D/mount3/mount3.log" 2>&1 &
trap '"$S" umount "$D/mnt3" >/dev/null 2>&1 || umount -l "$D/mnt3" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do [ -f "$D/mount3/ready.properties" ] && break; sleep 0.2; done
[ -f "$D/mount3/ready.properties" ] || { echo "the libfuse3 mount did not start: $D/mount3/mount3.log" >&2; exit 1; }

metric() { # $1 = metrics host:port, $2 = op; prints "requests bytes"
  curl -s "http://$1/metrics" | awk -v op="$2" '
    index($0, "strata_fuse_request_bytes_count{") == 1 && index($0, "op=\"" op "\"") {c = $2}
    index($0, "strata_fuse_request_bytes_sum{") == 1 && index($0, "op=\"" op "\"") {s = $2}
    END {printf "%.0f %.0f\n", c, s}'
}
for r in $(seq 1 "$ROUNDS"); do
  for m in mnt mnt3; do
    ready=$D/mount/ready.properties; [ $m = mnt3 ] && ready=$D/mount3/ready.properties
    mx=$(sed -n 's/^metrics=//p' "$ready" | tr -d '\\')
    f=$D/$m/side-by-side-$r.bin
    read -r w0 wb0 < <(metric "$mx" write)
    t0=$(date +%s.%N); dd if=/dev/zero of="$f" bs=1M count="$N" conv=fsync status=none; t1=$(date +%s.%N)
    read -r w1 wb1 < <(metric "$mx" write)
    "$S" cache drop "$D/$m" >/dev/null
    sync; echo 3 > /proc/sys/vm/drop_caches
    read -r r0 rb0 < <(metric "$mx" read)
    t2=$(date +%s.%N); dd if="$f" of=/dev/null bs=1M status=none; t3=$(date +%s.%N)
    read -r r1 rb1 < <(metric "$mx" read)
    awk -v m=$m -v r="$r" -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v w=$((w1 - w0)) -v wb=$((wb1 - wb0)) \
        -v rd=$((r1 - r0)) -v rb=$((rb1 - rb0)) -v la="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
      gib = n / 1024
      printf "round %d %-4s write %5.0f MB/s %6d requests/GiB (%4.0f KiB each) | cold read %5.0f MB/s %6d requests/GiB (%4.0f KiB each) | load %s\n",
        r, m, n * 1048576 / 1e6 / (t1 - t0), w / gib, (w ? wb / w / 1024 : 0), n * 1048576 / 1e6 / (t3 - t2), rd / gib, (rd ? rb / rd / 1024 : 0), la }'
    rm -f "$f"
  done
done
