#!/bin/bash
# Strata prefetch for Slurm sites without the burst_buffer/lua plugin: the PrologSlurmctld.
#
#   slurm.conf:  PrologSlurmctld=/etc/slurm/strata/prolog.sh
#                EpilogSlurmctld=/etc/slurm/strata/epilog.sh
#
# Slurm runs it on the controller once per job, after the job got its nodes and before it is
# launched (the job shows as CONFIGURING meanwhile). It reads the job's Strata directive, posts
# a hint for the job's nodes to Strata's scheduler hooks and waits until the hint is ready, so
# the job starts with its data in L2. Unlike the lua plugin's stage-in, the job holds its nodes
# while it waits.
#
# The directive is the same as for the lua plugin, among the #SBATCH lines of the batch script:
#     #BB_LUA strata prefetch path=/datasets/x deadline=30m priority=5
# or, for a job without a batch script (salloc, srun), its comment:
#     --comment "strata prefetch path=/datasets/x deadline=30m"
# Values cannot hold spaces here (path=/a/b*.tar is fine, quotes are not understood).
#
# Exit status: 0 when the hint is ready, when the wait passed STRATA_BB_MAX_WAIT (the job starts
# at-risk: what is not staged yet is read from L3), or when the job has no directive; 1 when the
# hint was refused or failed, or the hooks server is unreachable: Slurm then requeues a batch job
# (held) or cancels an interactive one. The reason is put in the job's AdminComment and on
# stderr.
#
# Settings: strata-bb.conf next to this script (KEY=VALUE lines, the same file the lua script
# reads; PrologSlurmctld does not inherit slurmctld's environment):
#   STRATA_HOOKS        the hooks server, HOST:PORT or https://HOST:PORT  (127.0.0.1:7390); a
#                       HOST:PORT is https:// when STRATA_HOOKS_CA is set, else http://
#   STRATA_HOOKS_CA     the CA certificate (PEM) that issued the hooks server's certificate (the
#                       cluster CA): curl verifies the server with it  (empty: none)
#   STRATA_BB_MAX_WAIT  the longest wait for ready, in seconds or 90s/30m/2h  (1h); keep it
#                       under PrologEpilogTimeout when that is set
#   STRATA_BB_POLL      how often to ask  (2s)
#   STRATA_BB_NODES     job: send the job's nodes; none: any L2 agent  (job)
#   STRATA_BB_MOUNT     a path under this mount point is taken relative to it  (empty)
#   STRATA_BB_TOKEN_FILE  a file holding a token of role scheduler  (empty: none)
#   SLURM_CONF          slurm.conf for scontrol, when not in the default place
# Needs bash, curl and scontrol.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STRATA_HOOKS=127.0.0.1:7390
STRATA_HOOKS_CA=
STRATA_BB_MAX_WAIT=1h
STRATA_BB_POLL=2s
STRATA_BB_NODES=job
STRATA_BB_MOUNT=
STRATA_BB_TOKEN_FILE=
if [ -r "$here/strata-bb.conf" ]; then
  # only the keys above, whatever else the file holds
  while IFS='=' read -r key value; do
    key=${key//[[:space:]]/}
    value=${value%%#*}
    value=$(echo "$value" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e 's/^"\(.*\)"$/\1/')
    case "$key" in
      STRATA_HOOKS | STRATA_HOOKS_CA | STRATA_BB_MAX_WAIT | STRATA_BB_POLL | STRATA_BB_NODES | STRATA_BB_MOUNT | STRATA_BB_TOKEN_FILE)
        printf -v "$key" '%s' "$value" ;;
      SLURM_CONF) export SLURM_CONF="$value" ;;
    esac
  done < "$here/strata-bb.conf"
fi

job=${SLURM_JOB_ID:?PrologSlurmctld runs with SLURM_JOB_ID set}
base=${STRATA_HOOKS%/}
base=${base%/v1}
# HOST:PORT: https with a CA file to verify the server, else http
case "$base" in *://*) ;; *) if [ -n "$STRATA_HOOKS_CA" ]; then base="https://$base"; else base="http://$base"; fi ;; esac

log() { echo "strata prolog: job $job: $*" >&2; }

# Tells the job's owner (scontrol show job: AdminComment) and the log why, holds the job so
# that Slurm's requeue does not start the same failing stage again and again, and fails.
fail() {
  log "$*"
  scontrol update jobid="$job" admincomment="strata: $*" >/dev/null 2>&1 || true
  scontrol hold "$job" >/dev/null 2>&1 || true
  exit 1
}

# Seconds in 90, 90s, 30m, 2h, 1d.
seconds() {
  local n=${1%[smhd]} unit=${1##*[0-9]}
  case "$unit" in m) n=$((n * 60)) ;; h) n=$((n * 3600)) ;; d) n=$((n * 86400)) ;; esac
  echo "$n"
}

# One field of a JSON answer ("state", "id", "error", ...): its first occurrence, unquoted.
# Good enough for the hooks server's answers, whose top-level keys come before nested ones.
field() {
  grep -oE '"'"$1"'" *: *("([^"\\]|\\.)*"|[^,}]*)' | head -n 1 |
    sed -E -e 's/^"[^"]*" *: *//' -e 's/^"(.*)"$/\1/' -e 's/\\"/"/g'
}

# The Authorization header line for curl's -H @- (the token never goes on a command line).
bearer() {
  if [ -n "$STRATA_BB_TOKEN_FILE" ]; then sed -n '1s/^/Authorization: Bearer /p' "$STRATA_BB_TOKEN_FILE"; fi
}

# An HTTP call: prints the answer and, on its last line, the status (000: unreachable).
call() {
  bearer | curl -sS -m "${3:-15}" -X "$1" -H 'Content-Type: application/json' -H @- -w '\n%{http_code}' \
    ${STRATA_HOOKS_CA:+--cacert "$STRATA_HOOKS_CA"} ${4:+--data-binary "$4"} "$base$2" 2>&1
}

# What to check when curl failed in a way TLS explains: a certificate it could not verify, or plain
# HTTP to a server that speaks HTTPS (which closes the connection without an answer).
tls_hint() {
  case "$base" in
    https://*) if grep -q -e SSL -e certificate <<< "$1"; then echo " (is STRATA_HOOKS_CA the CA that issued the hooks server's certificate?)"; fi ;;
    http://*) if grep -q -e 'Empty reply' -e 'Recv failure' <<< "$1"; then echo " (a hooks server with [tls] speaks HTTPS only: set STRATA_HOOKS_CA to the cluster CA's certificate)"; fi ;;
  esac
}

json_string() { printf '"%s"' "$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"; }

# The directive: #BB_LUA strata prefetch lines before the first command of the batch script,
# else the job's comment.
lines=$(scontrol write batch_script "$job" - 2>/dev/null |
  awk '/^#/ { if ($0 ~ /^#BB_LUA[ \t]+strata[ \t]/) { sub(/^#BB_LUA[ \t]+strata[ \t]+/, ""); print }; next }
       /^[ \t]*$/ { next } { exit }')
if [ -z "$lines" ] && [[ "${SLURM_JOB_COMMENT:-}" == strata\ * ]]; then
  lines=${SLURM_JOB_COMMENT#strata }
fi
[ -n "$lines" ] || exit 0

paths=() deadline= priority= qos=
while read -r verb rest; do
  [ "$verb" = prefetch ] || fail "unknown Strata directive \"$verb\" (expected: strata prefetch path=...)"
  for kv in $rest; do
    key=${kv%%=*} value=${kv#*=}
    case "$key" in
      path)
        if [ -n "$STRATA_BB_MOUNT" ] && [[ "$value" == "${STRATA_BB_MOUNT%/}"/* ]]; then value=${value#"${STRATA_BB_MOUNT%/}"}; fi
        [[ "$value" == /* ]] || fail "path=$value is not absolute"
        paths+=("$value") ;;
      deadline) deadline=$value ;;
      priority) priority=$value ;;
      qos) qos=$value ;;
      *) fail "\"$kv\" is not one of path=, deadline=, priority=, qos=" ;;
    esac
  done
done <<< "$lines"
[ ${#paths[@]} -gt 0 ] || fail "strata prefetch needs at least one path=..."

# The job's nodes, as Slurm names them.
nodes=()
if [ "$STRATA_BB_NODES" != none ] && [ -n "${SLURM_JOB_NODELIST:-}" ]; then
  mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null)
fi

# Posts the hint; the arguments are the nodes to name.
submit() {
  local body p sep= list=
  for p in "${paths[@]}"; do list+="$sep$(json_string "$p")"; sep=,; done
  body="{\"job\":$(json_string "$job"),\"paths\":[$list]"
  [ -n "$deadline" ] && body+=",\"deadline\":$(json_string "$deadline")"
  [ -n "$priority" ] && body+=",\"priority\":$priority"
  [ -n "$qos" ] && body+=",\"qos\":$(json_string "$qos")"
  if [ $# -gt 0 ]; then
    list= sep=
    for p in "$@"; do list+="$sep$(json_string "$p")"; sep=,; done
    body+=",\"nodes\":[$list]"
  fi
  call POST /v1/hints 600 "$body}"
}

answer=$(submit "${nodes[@]}")
code=${answer##*$'\n'}
# Slurm's node names may not be Strata's: then any L2 agent stages (still saving the L3 read).
if [ "$code" = 400 ] && [ ${#nodes[@]} -gt 0 ] && field error <<< "$answer" | grep -q '^nodes\['; then
  log "$(field error <<< "$answer"); staging on any L2 agent instead"
  answer=$(submit)
  code=${answer##*$'\n'}
fi
case "$code" in
  201) ;;
  000) fail "the scheduler hooks at $base are unreachable: $(head -n 1 <<< "$answer")$(tls_hint "$answer")" ;;
  *) fail "hint refused: $(field error <<< "$answer") (HTTP $code)" ;;
esac
id=$(field id <<< "$answer")
log "hint $id for ${paths[*]}${nodes[*]:+ on ${nodes[*]}}"

# Waits for ready, at most STRATA_BB_MAX_WAIT.
max_wait=$(seconds "$STRATA_BB_MAX_WAIT")
poll=$(seconds "$STRATA_BB_POLL")
start=$SECONDS
state=$(field state <<< "$answer")
while :; do
  case "$state" in
    ready) log "hint $id is ready after $((SECONDS - start))s"; exit 0 ;;
    failed | cancelled) fail "hint $id $state: $(field message <<< "$answer")" ;;
  esac
  if [ $((SECONDS - start)) -ge "$max_wait" ]; then
    log "starts at-risk after ${max_wait}s: hint $id is $state ($(field bytes_done <<< "$answer") of $(field bytes_total <<< "$answer") bytes)"
    exit 0
  fi
  sleep "$poll"
  next=$(call GET "/v1/hints/$id")
  case "${next##*$'\n'}" in
    200) answer=$next; state=$(field state <<< "$answer") ;;
    404) fail "hint $id is gone (its job was ended?)" ;;
    *) log "asking for hint $id: ${next%$'\n'*}" ;; # a hooks restart, say: ask again
  esac
done
