#!/usr/bin/env bash
# Starts and stops a MooseFS 3.0 cluster (master, 3 chunkservers, a client mount) for
# side-by-side benchmarks, from Debian's packages:
#   moosefs.sh up   WORKDIR MOUNTDIR     # prints the PIDs it started
#   moosefs.sh down WORKDIR              # stops them by PID, unmounts, removes the namespace
#
# MooseFS refuses loopback addresses between its daemons, so everything runs in a private
# network namespace whose only device is its own `lo`, with addresses from the benchmarking
# range 198.18.0.0/15 (no packet can leave it). nsenter --net (not `ip netns exec`) keeps the
# mount namespace, so the FUSE mount is visible outside. Durability is made comparable with
# Strata's: goal 3 and HDD_FSYNC_BEFORE_CLOSE = 1 (chunk files fsynced before close).
# Everything is started and stopped by PID (recorded in WORKDIR/pids), never by name.
# MooseFS raises its daemons and mount to nice -19 by default; MFS_NICE=N sets another level
# (0 puts them on an equal footing with processes at the default priority).
set -euo pipefail

NS=${MFS_NETNS:-strata-mfs}
NICE=${MFS_NICE:--19}
MASTER_IP=198.18.0.1
CS_IPS=(198.18.0.2 198.18.0.3 198.18.0.4)

die() { echo "moosefs.sh: $*" >&2; exit 1; }
# Commands run inside the namespace; backgrounded daemons are started with nsenter directly
# (not through a function or subshell) so that $! is the daemon's own PID.
in_ns() { nsenter --net="/run/netns/$NS" "$@"; }
NSENTER=(nsenter --net="/run/netns/$NS")

up() {
  local work=$1 mnt=$2
  for b in mfsmaster mfschunkserver mfsmount; do
    command -v "$b" >/dev/null || die "$b not found: apt-get install moosefs-master moosefs-chunkserver moosefs-client moosefs-cli"
  done
  [ -e "$work/pids" ] && die "$work/pids exists: run '$0 down $work' first"
  mkdir -p "$work" "$mnt"
  work=$(cd "$work" && pwd); mnt=$(cd "$mnt" && pwd)
  ip netns add "$NS"
  ip -n "$NS" link set lo up
  ip -n "$NS" addr add "$MASTER_IP/32" dev lo
  for ip in "${CS_IPS[@]}"; do ip -n "$NS" addr add "$ip/32" dev lo; done

  mkdir -p "$work/master"
  cp /var/lib/mfs/metadata.mfs.empty "$work/master/metadata.mfs"
  cat > "$work/master/mfsmaster.cfg" <<CFG
WORKING_USER = root
WORKING_GROUP = root
DATA_PATH = $work/master
EXPORTS_FILENAME = $work/master/mfsexports.cfg
TOPOLOGY_FILENAME = $work/master/mfstopology.cfg
NICE_LEVEL = $NICE
MATOML_LISTEN_HOST = $MASTER_IP
MATOCS_LISTEN_HOST = $MASTER_IP
MATOCL_LISTEN_HOST = $MASTER_IP
CFG
  echo "* / rw,alldirs,maproot=0:0" > "$work/master/mfsexports.cfg"
  : > "$work/master/mfstopology.cfg"
  "${NSENTER[@]}" mfsmaster -c "$work/master/mfsmaster.cfg" -f start > "$work/master.log" 2>&1 &
  echo "mfsmaster $!" >> "$work/pids"

  local i=0
  for ip in "${CS_IPS[@]}"; do
    i=$((i + 1))
    local d="$work/cs$i"
    mkdir -p "$d/data"
    echo "$d/data" > "$d/mfshdd.cfg"
    cat > "$d/mfschunkserver.cfg" <<CFG
WORKING_USER = root
WORKING_GROUP = root
DATA_PATH = $d
HDD_CONF_FILENAME = $d/mfshdd.cfg
HDD_LEAVE_SPACE_DEFAULT = 64MiB
HDD_FSYNC_BEFORE_CLOSE = 1
NICE_LEVEL = $NICE
BIND_HOST = $ip
CSSERV_LISTEN_HOST = $ip
MASTER_HOST = $MASTER_IP
CFG
    "${NSENTER[@]}" mfschunkserver -c "$d/mfschunkserver.cfg" -f start > "$work/cs$i.log" 2>&1 &
    echo "mfschunkserver$i $!" >> "$work/pids"
  done

  # wait for the three chunkservers to register
  local n=0
  for _ in $(seq 1 120); do
    n=$(in_ns mfscli -H "$MASTER_IP" -SCS 2>/dev/null | grep -c "198\.18\.0\." || true)
    [ "$n" -ge 3 ] && break
    sleep 0.5
  done
  [ "$n" -ge 3 ] || die "chunkservers did not register (see $work/*.log)"

  in_ns mfsmount "$mnt" -H "$MASTER_IP" -o mfscachemode=AUTO -o mfsnice="$NICE" > "$work/mount.log" 2>&1 || die "mfsmount failed (see $work/mount.log)"
  local mpid
  mpid=$(pgrep -f "mfsmount \(mounted on: $mnt\)" | head -n1 || true)
  [ -n "$mpid" ] && echo "mfsmount $mpid" >> "$work/pids"
  echo "$mnt" > "$work/mountpoint"
  in_ns mfssetgoal -r 3 "$mnt" >/dev/null
  in_ns mfssettrashtime -r 0 "$mnt" >/dev/null
  cat "$work/pids"
}

down() {
  local work=$1
  [ -f "$work/mountpoint" ] && { fusermount -u "$(cat "$work/mountpoint")" 2>/dev/null || umount -l "$(cat "$work/mountpoint")" 2>/dev/null || true; }
  if [ -f "$work/pids" ]; then
    while read -r name pid; do
      kill "$pid" 2>/dev/null || true
    done < "$work/pids"
    for _ in $(seq 1 50); do
      local alive=0
      while read -r name pid; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$work/pids"
      [ $alive -eq 0 ] && break
      sleep 0.2
    done
    while read -r name pid; do kill -9 "$pid" 2>/dev/null || true; done < "$work/pids"
    rm -f "$work/pids" "$work/mountpoint"
  fi
  ip netns del "$NS" 2>/dev/null || true
}

case "${1:-}" in
  up) [ $# -eq 3 ] || die "usage: $0 up WORKDIR MOUNTDIR"; up "$2" "$3" ;;
  down) [ $# -eq 2 ] || die "usage: $0 down WORKDIR"; down "$2" ;;
  *) die "usage: $0 up WORKDIR MOUNTDIR | down WORKDIR" ;;
esac
