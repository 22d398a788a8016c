#!/usr/bin/env bash
# Runs Strata's AI-workload fio suite on any directory and writes one JSON file plus a summary:
#   bench/fio/run-suite.sh DIR [OUT.json]
# Workloads (each bounded to well under a minute on 2 cores with the defaults):
#   checkpoint-save     4 writers x 256 MiB, 1 MiB sequential writes, fsync at the end
#   checkpoint-restore  the same shards read back cold, 1 MiB
#   sample-read-4k      random 4 KiB O_DIRECT reads over a 512 MiB data set, 4 readers
#   sample-read-128k    random 128 KiB O_DIRECT reads, same data set
#   small-files         create/stat/read/delete 4 x 2500 16 KiB files in 4 directories
# Sizes: FIO_WRITERS, FIO_SHARD, FIO_DATASET, FIO_RUNTIME (s), FIO_FILES. Before each cold
# read the page cache is dropped when this runs as root; FIO_DROP_CMD runs too if set (e.g. to
# empty a client cache). FIO_ONLY="sample-read-4k small-files" runs a subset.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 DIR [OUT.json]" >&2; exit 2; }
command -v fio >/dev/null || { echo "run-suite: fio is not installed (apt-get install fio)" >&2; exit 1; }
target=$1
out=${2:-fio-suite.json}
[ -d "$target" ] || { echo "run-suite: $target is not a directory" >&2; exit 1; }

export FIO_WRITERS=${FIO_WRITERS:-4} FIO_SHARD=${FIO_SHARD:-256M} FIO_DATASET=${FIO_DATASET:-512M}
export FIO_RUNTIME=${FIO_RUNTIME:-15} FIO_FILES=${FIO_FILES:-2500}
export FIO_DIR="$target/fio-suite.$$"
mkdir -p "$FIO_DIR"/sf0 "$FIO_DIR"/sf1 "$FIO_DIR"/sf2 "$FIO_DIR"/sf3
work=$(mktemp -d)
trap 'rm -rf "$FIO_DIR" "$work"' EXIT

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then echo 3 > /proc/sys/vm/drop_caches; fi
  if [ -n "${FIO_DROP_CMD:-}" ]; then bash -c "$FIO_DROP_CMD"; fi
}

workloads=${FIO_ONLY:-"checkpoint-save checkpoint-restore sample-read-4k sample-read-128k small-files"}
for w in $workloads; do
  case $w in
    checkpoint-restore|sample-read-*) drop_caches ;;
  esac
  echo "run-suite: $w on $target" >&2
  fio --output-format=json --output="$work/$w.json" "$here/$w.fio" >/dev/null
done

python3 - "$work" "$out" "$target" $workloads <<'PY'
import json, sys, os, platform, datetime
work, out, target, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
result = {"target": target, "host": platform.node(), "cores": os.cpu_count(),
          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "workloads": {}}
rows = []
for n in names:
    d = json.load(open(os.path.join(work, n + ".json")))
    for job in d["jobs"]:
        name = job["jobname"]
        side = "write" if job["write"]["io_bytes"] > 0 else "read"
        s = job[side]
        mbps = s["bw_bytes"] / 1e6
        iops = s["iops"]
        if name in ("small-stat", "small-delete"):
            # filestat/filedelete engines count one "I/O" per file
            secs = max(job["job_runtime"] / 1000.0, 1e-9)
            iops = s.get("total_ios", 0) / secs if s.get("total_ios") else iops
        pct = s.get("clat_ns", {}).get("percentile", {}) or s.get("lat_ns", {}).get("percentile", {})
        p99 = pct.get("99.000000", 0) / 1000.0
        mean = s.get("lat_ns", {}).get("mean", 0) / 1000.0
        result["workloads"][name] = {"mb_per_s": round(mbps, 2), "iops": round(iops, 1),
                                      "lat_mean_us": round(mean, 1), "lat_p99_us": round(p99, 1),
                                      "bytes": s["io_bytes"], "runtime_ms": job["job_runtime"]}
        rows.append((name, mbps, iops, mean, p99))
json.dump(result, open(out, "w"), indent=2)
print(f"{'workload':20} {'MB/s':>10} {'IOPS':>10} {'mean us':>10} {'p99 us':>10}")
for r in rows:
    print(f"{r[0]:20} {r[1]:10.1f} {r[2]:10.0f} {r[3]:10.0f} {r[4]:10.0f}")
print(f"wrote {out}")
PY
