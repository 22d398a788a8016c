#!/usr/bin/env bash
# Where the scheduler hooks' planner thread waits while it stages: three jobs hint overlapping
# datasets (3 segments of 8 x 64 MiB files, job i wants segments i and i+1), and once all are
# ready the hooks process's strata_hooks_planner_step_seconds (time in steps that wait for the
# meta service or the cluster manager, no fetch being sent meanwhile) is printed with the
# staging time. Needs root (drop_caches).
#
#   bench/probe/hooks-planner-steps.sh DATA
#
# DATA is a running `strata up` data directory; the files go to DATA/mnt/planner-probe (removed
# at the end, and the jobs ended).
set -euo pipefail
D=$(cd "$1" && pwd)
S="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bin/strata"
M=$D/mnt/planner-probe
export STRATA_NO_BUILD=1
metrics() {
  local h; h=$(grep -h "^metrics=" "$D/hooks/ready.properties" | cut -d= -f2 | tr -d '\\')
  curl -sf "http://$h/metrics" | grep -E '^strata_hooks_planner_step_seconds_(sum|max)' | sed 's/{kind="hooks",node="hooks",/{/'
}
cleanup() {
  for j in 0 1 2; do "$S" prefetch end --data "$D" probe-job-$j >/dev/null 2>&1 || true; done
  rm -rf "$M"
}
trap cleanup EXIT
for s in 0 1 2; do
  mkdir -p "$M/seg-$s"
  for i in 0 1 2 3 4 5 6 7; do dd if=/dev/urandom of="$M/seg-$s/f$i" bs=1M count=64 status=none & done
  wait
done
sync; echo 3 > /proc/sys/vm/drop_caches
echo "before:"; metrics
ids=()
for j in 0 1 2; do
  n=$(( (j + 1) % 3 ))
  out=$("$S" prefetch submit --data "$D" --job probe-job-$j --path /planner-probe/seg-$j --path /planner-probe/seg-$n --deadline 10m)
  ids+=("$(echo "$out" | sed -n 's/^hint \([0-9]*\):.*/\1/p')")
done
# follow the hints through the API (HTTPS with the cluster CA when it runs TLS, the admin token)
api=$(grep -h "^http=" "$D/hooks/ready.properties" | cut -d= -f2 | tr -d '\\')
curl_args=(-sf -H "Authorization: Bearer $(head -1 "$D/admin.token")")
if [ -f "$D/tls/ca.pem" ]; then api=https://$api; curl_args+=(--cacert "$D/tls/ca.pem"); else api=http://$api; fi
for id in "${ids[@]}"; do
  until curl "${curl_args[@]}" "$api/v1/hints/$id" | grep -q '"state" *: *"ready"'; do sleep 0.25; done
done
echo "after:"; metrics
tmp=$(mktemp -d)
for id in "${ids[@]}"; do curl "${curl_args[@]}" "$api/v1/hints/$id" > "$tmp/$id.json"; done
python3 - "$tmp"/*.json <<'PY'
import sys, json, datetime
hs = [json.load(open(f)) for f in sys.argv[1:]]
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
print("staging: %.1f s from the first submission to the last ready_at" % (max(t(h["ready_at"]) for h in hs) - min(t(h["created"]) for h in hs)))
PY
rm -rf "$tmp"
