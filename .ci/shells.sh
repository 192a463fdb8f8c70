#!/bin/sh
# Unpacks Debian's dynamic busybox (package `busybox`) for the differential shell harness
# (shellrisk/differential) at /var/cache/airlock-ci/busybox/bin/busybox, without installing
# it: it conflicts with busybox-static, which the other Docker tests use. The harness needs
# this build because busybox-static's ash runs applets (rm, cat, sh…) inside itself and never
# looks at PATH, so the harness's recorders would not see them; both builds come from the
# same source and read commands alike. Idempotent; prints nothing but errors.
set -eu
DIR=${AIRLOCK_BUSYBOX_DIR:-/var/cache/airlock-ci/busybox}
[ -x "$DIR/bin/busybox" ] && exit 0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
chmod 755 "$TMP" # apt's _apt user downloads into it
cd "$TMP"
if ! apt-get download busybox >/dev/null 2>&1; then
	apt-get update -qq
	apt-get download busybox >/dev/null 2>&1 || { echo "shells.sh: apt-get download busybox failed" >&2; exit 1; }
fi
dpkg-deb -x busybox_*.deb root
[ -x root/bin/busybox ] || { echo "shells.sh: no bin/busybox in the busybox package" >&2; exit 1; }
mkdir -p "$(dirname "$DIR")"
rm -rf "$DIR"
mv root "$DIR"
