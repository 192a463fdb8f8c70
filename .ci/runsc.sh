#!/usr/bin/env bash
# Builds gVisor's runsc from the Go module proxy, cached by version outside the clone, and prints
# its path. Seconds when cached; ~1 min to build on 2 cores (gVisor publishes no tagged Go
# module versions, so the version is a pinned pseudo-version of gvisor.dev/gvisor).
#
#   bash .ci/runsc.sh      prints e.g. /var/cache/airlock/runsc-v0.0.0-20260905035102-160fafc42237/runsc
#
# .ci/dockerd.sh registers it as the Docker runtime `runsc` (AIRLOCK_RUNSC=<path>).
set -euo pipefail

RUNSC_VERSION=${AIRLOCK_RUNSC_VERSION:-v0.0.0-20260905035102-160fafc42237}
CACHE=${AIRLOCK_RUNSC_CACHE:-/var/cache/airlock/runsc-$RUNSC_VERSION}
BIN=$CACHE/runsc

die() { echo "runsc.sh: $*" >&2; exit 1; }

# A cached build must at least run.
if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
	echo "$BIN"
	exit 0
fi
command -v go >/dev/null 2>&1 || die "go not found"
work=$(mktemp -d /var/tmp/airlock-runsc-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
echo "runsc.sh: building gvisor.dev/gvisor/runsc@$RUNSC_VERSION" >&2
# Outside any module: go install pkg@version builds the module as published, with its go.sum.
(cd "$work" && CGO_ENABLED=0 GOBIN="$work/bin" go install "gvisor.dev/gvisor/runsc@$RUNSC_VERSION") ||
	die "go install gvisor.dev/gvisor/runsc@$RUNSC_VERSION failed"
"$work/bin/runsc" --version >/dev/null 2>&1 || die "the built runsc does not run"
mkdir -p "$CACHE"
install -m 0755 "$work/bin/runsc" "$BIN.tmp"
mv -f "$BIN.tmp" "$BIN"
echo "runsc.sh: built in $(($(date +%s) - start)) s" >&2
echo "$BIN"
