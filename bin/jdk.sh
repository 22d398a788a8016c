# shellcheck shell=bash
# Sourced by Strata's scripts: finds a JDK 21+ and exports JAVA_HOME and STRATA_JAVA_OPTS.
# Order: $JAVA_HOME if it is 21+, else the newest 21+ JDK under /usr/lib/jvm (or
# $STRATA_JVM_DIR), else `java` on the PATH if it is 21+. Fails with what to install.

strata_java_major() { # $1 = JDK home; prints its feature version (17, 21, 25...) or nothing
  local home=$1 v=""
  if [ -f "$home/release" ]; then
    v=$(sed -n 's/^JAVA_VERSION="\([0-9][0-9]*\).*/\1/p' "$home/release" | head -n1)
  fi
  if [ -z "$v" ] && [ -x "$home/bin/java" ]; then
    v=$("$home/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n1)
  fi
  [ "$v" = "1" ] && v=8
  printf '%s' "$v"
}

strata_find_jdk() {
  local best="" best_v=0 d v
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    v=$(strata_java_major "$JAVA_HOME")
    if [ -n "$v" ] && [ "$v" -ge 21 ]; then printf '%s' "$JAVA_HOME"; return 0; fi
  fi
  for d in "${STRATA_JVM_DIR:-/usr/lib/jvm}"/*; do
    [ -x "$d/bin/javac" ] || continue
    [ -L "$d" ] && continue
    v=$(strata_java_major "$d")
    [ -n "$v" ] || continue
    if [ "$v" -ge 21 ] && [ "$v" -gt "$best_v" ]; then best=$d; best_v=$v; fi
  done
  if [ -n "$best" ]; then printf '%s' "$best"; return 0; fi
  if command -v javac >/dev/null 2>&1; then
    d=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
    v=$(strata_java_major "$d")
    if [ -n "$v" ] && [ "$v" -ge 21 ]; then printf '%s' "$d"; return 0; fi
  fi
  return 1
}

if ! STRATA_JDK=$(strata_find_jdk); then
  echo "strata: no JDK 21 or newer found (JAVA_HOME=${JAVA_HOME:-unset}, looked in ${STRATA_JVM_DIR:-/usr/lib/jvm} and on the PATH)." >&2
  echo "strata: install one, e.g. 'apt-get install openjdk-21-jdk-headless' or Temurin 25 (https://adoptium.net), then retry or set JAVA_HOME." >&2
  exit 1
fi
export JAVA_HOME=$STRATA_JDK
STRATA_JAVA_MAJOR=$(strata_java_major "$JAVA_HOME")
export STRATA_JAVA_MAJOR
# lmdbjava reflects into java.nio; JDK 24+ also wants native access and Unsafe allowed explicitly.
STRATA_JAVA_OPTS="--add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED"
if [ "$STRATA_JAVA_MAJOR" -ge 24 ]; then
  STRATA_JAVA_OPTS="$STRATA_JAVA_OPTS --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow"
fi
export STRATA_JAVA_OPTS
