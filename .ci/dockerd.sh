#!/bin/sh
# Starts Airlock's own Docker daemon for tests and makes sure the test images exist.
#
# Idempotent: when the socket already answers, the daemon is left alone. Prints nothing but
# errors. Afterwards: export DOCKER_HOST=unix:///run/airlock-ci/docker.sock
set -eu

RUN=/run/airlock-ci
SOCK="unix://$RUN/docker.sock"
DATA=/var/lib/airlock-ci/docker
LOG=/var/log/airlock-ci-dockerd.log
IMAGE=airlock-test/busybox:latest

die() { echo "dockerd.sh: $*" >&2; exit 1; }

command -v dockerd >/dev/null 2>&1 || die "dockerd not found: apt-get install docker.io"
command -v docker >/dev/null 2>&1 || die "docker client not found: apt-get install docker.io"

if ! docker -H "$SOCK" version >/dev/null 2>&1; then
	mkdir -p "$RUN/exec" "$DATA"
	# A stale pid file from a daemon that died would stop the new one from starting.
	if [ -f "$RUN/docker.pid" ] && ! kill -0 "$(cat "$RUN/docker.pid")" 2>/dev/null; then
		rm -f "$RUN/docker.pid"
	fi
	rm -f "$RUN/docker.sock"
	# setsid: the daemon must outlive this script and its process group.
	setsid dockerd --data-root "$DATA" --exec-root "$RUN/exec" -H "$SOCK" \
		--pidfile "$RUN/docker.pid" >>"$LOG" 2>&1 </dev/null &
	i=0
	until docker -H "$SOCK" version >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 300 ] || die "dockerd did not answer on $SOCK within 30s; see $LOG"
		sleep 0.1
	done
fi

if ! docker -H "$SOCK" image inspect "$IMAGE" >/dev/null 2>&1; then
	BB=$(command -v busybox || true)
	[ -n "$BB" ] || die "busybox not found: apt-get install busybox-static"
	ROOT=$(mktemp -d)
	trap 'rm -rf "$ROOT"' EXIT
	mkdir -p "$ROOT/bin" "$ROOT/etc" "$ROOT/tmp" "$ROOT/workspace" "$ROOT/proc" "$ROOT/sys" "$ROOT/dev"
	# Writable by the default non-root user (65534) when no volume is mounted there.
	chmod 0777 "$ROOT/workspace"
	chmod 1777 "$ROOT/tmp"
	cp "$BB" "$ROOT/bin/busybox"
	for applet in $("$BB" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$ROOT/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$ROOT/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$ROOT/etc/group"
	tar -C "$ROOT" -c . | docker -H "$SOCK" import -c 'ENV PATH=/bin' - "$IMAGE" >/dev/null ||
		die "docker import of $IMAGE failed"
fi
