#!/bin/sh
# Starts Airlock's own Docker daemon for tests and makes sure the test images exist.
#
# Idempotent: when the socket already answers, the daemon is left alone, except that a runtime
# asked for and not yet registered is added (see below). Prints nothing but errors.
# Afterwards: export DOCKER_HOST=unix:///run/airlock-ci/docker.sock
#
# AIRLOCK_RUNSC=<path to runsc> (from .ci/runsc.sh) registers gVisor as the runtime `runsc`,
# with --oci-seccomp so the seccomp profile Docker gives a container is enforced inside gVisor
# too (without it runsc ignores the profile). The runtimes live in a daemon.json of our own
# ($RUN/daemon.json) that the daemon is always started with, so adding one later is a rewrite
# and a SIGHUP (dockerd reloads `runtimes` live), not a restart. A daemon started by an older
# version of this script, without that file, has to be restarted once: refused while a test
# binary runs (its containers would die with the daemon).
#
# AIRLOCK_DOCKERD_RUN, AIRLOCK_DOCKERD_DATA and AIRLOCK_DOCKERD_ARGS start a second, separate
# daemon (its own socket, pid file, exec root and data root; extra dockerd flags such as
# --bridge=none --iptables=false so it leaves the first daemon's network alone) for experiments.
set -eu

RUN=${AIRLOCK_DOCKERD_RUN:-/run/airlock-ci}
SOCK="unix://$RUN/docker.sock"
DATA=${AIRLOCK_DOCKERD_DATA:-/var/lib/airlock-ci/docker}
LOG=/var/log/$(echo "${RUN#/run/}" | tr / -)-dockerd.log
CONF=$RUN/daemon.json
IMAGE=airlock-test/busybox:latest
RUNSC=${AIRLOCK_RUNSC:-}

die() { echo "dockerd.sh: $*" >&2; exit 1; }

command -v dockerd >/dev/null 2>&1 || die "dockerd not found: apt-get install docker.io"
command -v docker >/dev/null 2>&1 || die "docker client not found: apt-get install docker.io"

write_conf() {
	mkdir -p "$RUN"
	if [ -n "$RUNSC" ]; then
		[ -x "$RUNSC" ] || die "AIRLOCK_RUNSC=$RUNSC is not an executable"
		printf '{"runtimes": {"runsc": {"path": "%s", "runtimeArgs": ["--oci-seccomp"]}}}\n' "$RUNSC" >"$CONF.tmp"
	else
		echo '{}' >"$CONF.tmp"
	fi
	mv -f "$CONF.tmp" "$CONF"
}

has_runsc() { docker -H "$SOCK" info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

wait_answer() {
	i=0
	until docker -H "$SOCK" version >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 300 ] || die "dockerd did not answer on $SOCK within 30s; see $LOG"
		sleep 0.1
	done
}

daemon_pid() { cat "$RUN/docker.pid" 2>/dev/null || true; }

# The running daemon reads our daemon.json: it was started with --config-file $CONF.
reads_conf() {
	pid=$(daemon_pid)
	[ -n "$pid" ] && tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qx -- "--config-file=$CONF"
}

if docker -H "$SOCK" version >/dev/null 2>&1 && [ -n "$RUNSC" ] && ! has_runsc; then
	if reads_conf; then
		write_conf
		kill -HUP "$(daemon_pid)"
		i=0
		until has_runsc; do
			i=$((i + 1))
			[ "$i" -le 100 ] || die "dockerd did not load the runtime runsc from $CONF; see $LOG"
			sleep 0.1
		done
	else
		if pgrep -f 'go test|\.test( |$)' >/dev/null 2>&1; then
			# Not fatal: the runc tests can run; what needs runsc fails and says it is missing.
			echo "dockerd.sh: runtime runsc NOT registered: dockerd on $SOCK must restart once to read $CONF, but a test is running (pgrep -f 'go test|\.test'); run this again when it ends" >&2
			RUNSC=
		fi
	fi
	if [ -n "$RUNSC" ] && ! reads_conf; then
		pid=$(daemon_pid)
		[ -n "$pid" ] || die "dockerd on $SOCK has no pid file $RUN/docker.pid; stop it by hand"
		kill -TERM "$pid"
		i=0
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			[ "$i" -le 600 ] || die "dockerd (pid $pid) did not stop within 60s"
			sleep 0.1
		done
	fi
fi

if ! docker -H "$SOCK" version >/dev/null 2>&1; then
	mkdir -p "$RUN/exec" "$DATA"
	# A stale pid file from a daemon that died would stop the new one from starting.
	if [ -f "$RUN/docker.pid" ] && ! kill -0 "$(cat "$RUN/docker.pid")" 2>/dev/null; then
		rm -f "$RUN/docker.pid"
	fi
	rm -f "$RUN/docker.sock"
	write_conf
	# setsid: the daemon must outlive this script and its process group.
	# shellcheck disable=SC2086
	setsid dockerd --data-root "$DATA" --exec-root "$RUN/exec" -H "$SOCK" \
		--pidfile "$RUN/docker.pid" --config-file="$CONF" ${AIRLOCK_DOCKERD_ARGS:-} >>"$LOG" 2>&1 </dev/null &
	wait_answer
	if [ -n "$RUNSC" ] && ! has_runsc; then die "dockerd did not register the runtime runsc; see $LOG"; fi
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
