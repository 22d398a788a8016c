#!/bin/bash
# Strata prefetch for Slurm sites without the burst_buffer/lua plugin: the EpilogSlurmctld,
# the companion of prolog.sh.
#
#   slurm.conf:  EpilogSlurmctld=/etc/slurm/strata/epilog.sh
#
# Slurm runs it on the controller once per job when the job ended (or was cancelled, or is being
# requeued). It ends the job's hints at Strata's scheduler hooks (POST /v1/jobs/{job}/end): the
# L2 agents release what they pinned for the job and the hints are removed. A job without a hint
# is answered 404, which is fine. Settings: STRATA_HOOKS, STRATA_HOOKS_CA (the CA certificate that
# verifies an HTTPS hooks server; with it a HOST:PORT is https://) and STRATA_BB_TOKEN_FILE (a
# file holding a token of role scheduler) in strata-bb.conf next to this script, as for prolog.sh.
#
# Exit status: 0, also when the hooks server is unreachable (the failure is printed on stderr):
# the job is over either way. A hint that could not be ended keeps its pins until an operator
# runs `strata prefetch end JOB`.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STRATA_HOOKS=127.0.0.1:7390
STRATA_HOOKS_CA=
STRATA_BB_TOKEN_FILE=
setting() {
  sed -n 's/^[[:space:]]*'"$1"'[[:space:]]*=[[:space:]]*"\{0,1\}\([^"#[:space:]]*\).*/\1/p' "$here/strata-bb.conf" | tail -n 1
}
if [ -r "$here/strata-bb.conf" ]; then
  value=$(setting STRATA_HOOKS)
  [ -n "$value" ] && STRATA_HOOKS=$value
  STRATA_HOOKS_CA=$(setting STRATA_HOOKS_CA)
  STRATA_BB_TOKEN_FILE=$(setting STRATA_BB_TOKEN_FILE)
fi
job=${SLURM_JOB_ID:?EpilogSlurmctld runs with SLURM_JOB_ID set}
base=${STRATA_HOOKS%/}
base=${base%/v1}
# HOST:PORT: https with a CA file to verify the server, else http
case "$base" in *://*) ;; *) if [ -n "$STRATA_HOOKS_CA" ]; then base="https://$base"; else base="http://$base"; fi ;; esac

bearer() {
  if [ -n "$STRATA_BB_TOKEN_FILE" ]; then sed -n '1s/^/Authorization: Bearer /p' "$STRATA_BB_TOKEN_FILE"; fi
}
answer=$(bearer | curl -sS -m 15 -X POST -H @- --data-binary '' -w '\n%{http_code}' ${STRATA_HOOKS_CA:+--cacert "$STRATA_HOOKS_CA"} \
  "$base/v1/jobs/$job/end" 2>&1)
case "${answer##*$'\n'}" in
  200 | 404) ;;
  *) echo "strata epilog: job $job: ending its hints at $base failed: ${answer%$'\n'*}" >&2 ;;
esac
exit 0
