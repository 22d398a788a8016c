#!/usr/bin/env bash
# Runs the strata-ckpt tests from this source tree (no install needed); the exit status is the result.
#
#   STRATA_CKPT_ROOT=/mnt/strata/ckpt-test ./run-tests.sh   # also the tests that need a mount
#   PYTHON=/usr/bin/python3 ./run-tests.sh                   # another interpreter (e.g. one with torch)
#
# Without STRATA_CKPT_ROOT the mount tests are skipped; without an importable torch the torch tests are.
# Extra arguments go to unittest (e.g. -k many_writers).
set -euo pipefail
cd "$(dirname "$0")"
exec "${PYTHON:-python3}" -m unittest discover -s tests -v "$@"
