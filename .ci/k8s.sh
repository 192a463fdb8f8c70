#!/usr/bin/env bash
# A real two-node Kubernetes cluster on this one machine, for the Kubernetes backend's tests.
#
#   bash .ci/k8s.sh build              kube-* and etcd binaries, cached by version (seconds when cached)
#   bash .ci/k8s.sh images             pause and busybox image tars (cached), imported into running nodes
#   bash .ci/k8s.sh up                 etcd, API server, scheduler, controller manager, two nodes
#   bash .ci/k8s.sh down               stop everything by PID and leave nothing behind
#   bash .ci/k8s.sh env                the exports the tests read (AIRLOCK_K8S_KUBECONFIG, ...)
#   bash .ci/k8s.sh restart-apiserver  stop the API server by PID, start it again, wait until it answers
#
# Why each setting is what it is: ../shared/notes/kubernetes-test-cluster.md (binaries built from
# the Go module proxy; CAP_SYS_RESOURCE missing so containerd restricts oom_score_adj; cgroup v1
# so failCgroupV1 false and cgroupfs; kubelet refuses a loopback node IP so each node lives in its
# own network namespace, joined by a bridge in a "switch" namespace because the host's FORWARD
# policy may be DROP; kubelet rewrites three sysctls, saved here and restored by down).
#
# Addresses (all in namespaces this script creates, and loopback): the host side of the switch is
# 10.214.0.1 (the API server listens there, port 16443), node N is 10.214.0.1N with pods in
# 10.215.N.0/24, services in 10.216.0.0/24; etcd listens on 127.0.0.1:23790/23800.
# 10.213.0.0/16 is left to the SSH tests (backend/ssh/sshtest).
set -euo pipefail

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.6.16
CACHE=${AIRLOCK_K8S_CACHE:-/var/cache/airlock/k8s-$K8S_VERSION}
STATE=/run/airlock-ci/k8s
DATA=/var/lib/airlock-ci/k8s
LOGS=/var/log/airlock-ci-k8s
KUBECONFIG_PATH=$STATE/kubeconfig
IMAGE=airlock-test/busybox:1
PAUSE_IMAGE=airlock-test/pause:1
NODES=(airlock-k8s-n1 airlock-k8s-n2)
SWITCH=airlock-k8s-sw
HOST_VETH=alk8s-host
HOST_IP=10.214.0.1
API_PORT=16443
API_URL=https://$HOST_IP:$API_PORT
ETCD_URL=http://127.0.0.1:23790
SERVICE_RANGE=10.216.0.0/24
SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory)
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)
# Directories kubelet creates at fixed host paths whatever its root dir; removed by down when empty.
KUBELET_HOST_DIRS=(/var/lib/kubelet/device-plugins /var/lib/kubelet /var/log/containers /var/log/pods
	/usr/libexec/kubernetes/kubelet-plugins/volume/exec /usr/libexec/kubernetes/kubelet-plugins/volume
	/usr/libexec/kubernetes/kubelet-plugins /usr/libexec/kubernetes)

SCRIPT=$(readlink -f "$0")
die() { echo "k8s.sh: $*" >&2; exit 1; }
say() { echo "k8s.sh: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

node_index() { echo "${1##*-n}"; }
node_ip() { echo "10.214.0.1$(node_index "$1")"; }
node_subnet() { echo "10.215.$(node_index "$1").0/24"; }
node_sock() { echo "$STATE/$1/containerd.sock"; }

# ---------------------------------------------------------------------------------------------
# build

have_binaries() {
	local b
	for b in "${BINARIES[@]}"; do [ -x "$CACHE/$b" ] || return 1; done
	# Captured first: under pipefail, `prog | grep -q` fails when grep's early exit makes prog's
	# later writes hit a closed pipe.
	local v
	v=$("$CACHE/kube-apiserver" --version 2>/dev/null) || return 1
	[ "$v" = "Kubernetes $K8S_VERSION" ] || return 1
	v=$("$CACHE/etcd" --version 2>/dev/null) || return 1
	case "$v" in *"etcd Version: ${ETCD_VERSION#v}"*) ;; *) return 1 ;; esac
}

# The Kubernetes module cannot be `go install`ed (its go.mod replaces the staging modules with
# ./staging/...): a throwaway module requires it and replaces each staging module with the same
# module at the matching v0 version from the proxy.
build_kubernetes() {
	local work=$1 gomod staging m
	mkdir -p "$work/k8s"
	gomod=$(cd "$work/k8s" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
	[ -f "$gomod" ] || die "could not download the go.mod of k8s.io/kubernetes@$K8S_VERSION"
	staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$gomod" | grep -v '/sample-' | sort -u)
	[ -n "$staging" ] || die "no staging replacements found in $gomod"
	{
		echo "module airlock.test/k8sbuild"
		echo
		echo "go $(go env GOVERSION | sed 's/^go//')"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		for m in $staging; do echo "replace $m => $m $STAGING_VERSION"; done
	} >"$work/k8s/go.mod"
	say "build: $(echo "$staging" | wc -l) staging modules replaced at $STAGING_VERSION"
	(
		cd "$work/k8s"
		go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" k8s.io/kubernetes/cmd/kubelet \
			k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager >/dev/null
		local ld="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
		ld="$ld -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
		for m in kube-apiserver kubelet kube-scheduler kube-controller-manager; do
			say "build: $m"
			CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$work/bin/$m" "k8s.io/kubernetes/cmd/$m"
		done
	)
}

build_etcd() {
	local work=$1
	mkdir -p "$work/etcd"
	(
		cd "$work/etcd"
		printf 'module airlock.test/etcdbuild\n\ngo %s\n' "$(go env GOVERSION | sed 's/^go//')" >go.mod
		go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
		say "build: etcd"
		CGO_ENABLED=0 go build -trimpath -o "$work/bin/etcd" go.etcd.io/etcd/server/v3
	)
}

cmd_build() {
	if have_binaries; then
		return 0
	fi
	command -v go >/dev/null 2>&1 || die "go not found"
	local start work b
	start=$(now)
	work=$(mktemp -d /var/tmp/airlock-k8s-build.XXXXXX)
	# shellcheck disable=SC2064
	trap "rm -rf '$work'" EXIT
	mkdir -p "$work/bin"
	say "build: Kubernetes $K8S_VERSION and etcd $ETCD_VERSION from the Go module proxy (~10 min on 2 idle cores)"
	build_kubernetes "$work"
	build_etcd "$work"
	mkdir -p "$CACHE"
	for b in "${BINARIES[@]}"; do
		install -m 0755 "$work/bin/$b" "$CACHE/$b.tmp"
		mv -f "$CACHE/$b.tmp" "$CACHE/$b"
	done
	have_binaries || die "built binaries in $CACHE do not report $K8S_VERSION / $ETCD_VERSION"
	say "build: done in $(since "$start") s"
}

# ---------------------------------------------------------------------------------------------
# images

# image_tar OUT NAME ROOTDIR CONFIG_JSON_FRAGMENT writes a `docker save` style tar (one layer)
# that `ctr images import` reads, without Docker or a registry.
image_tar() {
	local out=$1 name=$2 root=$3 cfg=$4 dir diff config cfgsum
	dir=$(mktemp -d)
	mkdir -p "$dir/layer"
	tar -C "$root" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$dir/layer/layer.tar" .
	diff=$(sha256sum "$dir/layer/layer.tar" | cut -d' ' -f1)
	config=$(printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$cfg" "$diff")
	cfgsum=$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)
	printf '%s' "$config" >"$dir/$cfgsum.json"
	printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer/layer.tar"]}]' "$cfgsum" "$name" >"$dir/manifest.json"
	tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$out.tmp" manifest.json "$cfgsum.json" layer
	mv -f "$out.tmp" "$out"
	rm -rf "$dir"
}

build_pause() {
	local out=$1 dir
	dir=$(mktemp -d)
	mkdir -p "$dir/root"
	# The sandbox's first process: sleeps until told to stop, reaps orphans meanwhile.
	cat >"$dir/pause.c" <<'EOF'
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
	signal(SIGINT, stop);
	signal(SIGTERM, stop);
	signal(SIGCHLD, reap);
	for (;;) pause();
}
EOF
	gcc -static -O2 -o "$dir/root/pause" "$dir/pause.c" || die "gcc -static failed (apt-get install gcc libc6-dev)"
	image_tar "$out" "$PAUSE_IMAGE" "$dir/root" '{"Entrypoint":["/pause"]}'
	rm -rf "$dir"
}

# The same root filesystem as the Docker tests' image (.ci/dockerd.sh).
build_busybox() {
	local out=$1 root bb applet
	bb=$(command -v busybox) || die "busybox not found: apt-get install busybox-static"
	root=$(mktemp -d)
	mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/workspace" "$root/proc" "$root/sys" "$root/dev"
	chmod 0777 "$root/workspace"
	chmod 1777 "$root/tmp"
	cp "$bb" "$root/bin/busybox"
	for applet in $("$bb" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	image_tar "$out" "$IMAGE" "$root" '{"Env":["PATH=/bin"],"Cmd":["/bin/sh"]}'
	rm -rf "$root"
}

image_tars() {
	mkdir -p "$CACHE/images"
	[ -s "$CACHE/images/pause.tar" ] || build_pause "$CACHE/images/pause.tar"
	[ -s "$CACHE/images/busybox.tar" ] || build_busybox "$CACHE/images/busybox.tar"
}

import_images() {
	local node=$1 t
	for t in pause busybox; do
		ctr -a "$(node_sock "$node")" -n k8s.io images import "$CACHE/images/$t.tar" >/dev/null ||
			die "ctr images import of $t.tar into $node failed"
	done
}

cmd_images() {
	image_tars
	local node
	for node in "${NODES[@]}"; do
		if [ -S "$(node_sock "$node")" ] && ctr -a "$(node_sock "$node")" version >/dev/null 2>&1; then
			import_images "$node"
		fi
	done
}

# ---------------------------------------------------------------------------------------------
# processes

# is_ours PID BINARY: the PID is alive and runs BINARY (a PID file from a dead run may name a
# PID that now belongs to something else).
is_ours() {
	local pid=$1 bin=$2 exe=
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	IFS= read -r -d '' exe <"/proc/$pid/cmdline" 2>/dev/null || true
	[ "$exe" = "$bin" ]
}

pidfile_pid() { cat "$STATE/$1.pid" 2>/dev/null || true; }

# start NAME NETNS BINARY ARGS...: runs BINARY in the background (in NETNS when not empty),
# detached from this script, logging to $LOGS/NAME.log, its PID in $STATE/NAME.pid.
start() {
	local name=$1 ns=$2 pid
	shift 2
	mkdir -p "$LOGS"
	if [ -n "$ns" ]; then
		setsid nsenter --net="/run/netns/$ns" "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	else
		setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	fi
	pid=$!
	echo "$pid" >"$STATE/$name.pid"
}

# stop_pid PID [GRACE]: TERM, GRACE seconds (default 10), then KILL.
stop_pid() {
	local pid=$1 grace=${2:-10} deadline
	kill -TERM "$pid" 2>/dev/null || return 0
	deadline=$(($(date +%s) + grace))
	while [ -d "/proc/$pid" ]; do
		[ "$(date +%s)" -lt "$deadline" ] || kill -KILL "$pid" 2>/dev/null || true
		[ "$(date +%s)" -lt $((deadline + 10)) ] || { say "PID $pid did not exit"; return 1; }
		sleep 0.1
	done
}

# stop_named NAME BINARY [GRACE]: stops the process of NAME's PID file, and any other process
# running exactly BINARY (left by a run whose PID files were lost).
stop_named() {
	local name=$1 bin=$2 grace=${3:-10} pid p
	pid=$(pidfile_pid "$name")
	if is_ours "$pid" "$bin"; then stop_pid "$pid" "$grace"; fi
	for p in /proc/[0-9]*; do
		p=${p#/proc/}
		if is_ours "$p" "$bin"; then stop_pid "$p" "$grace"; fi
	done
	rm -f "$STATE/$name.pid"
}

# wait_until SECONDS WHAT COMMAND...: retries COMMAND every 0.2 s until it succeeds.
wait_until() {
	local limit=$1 what=$2 deadline
	shift 2
	deadline=$(($(date +%s) + limit))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
	say "$what"
}

api() { curl -sf --max-time 5 --cacert "$STATE/pki/ca.crt" -H "Authorization: Bearer $(cat "$STATE/pki/admin.token")" "$API_URL$1"; }

# ---------------------------------------------------------------------------------------------
# up

ensure_packages() {
	local p missing=()
	for p in containerd runc containernetworking-plugins iptables openssl curl python3 busybox-static gcc libc6-dev iproute2; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		say "installing: ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
}

make_pki() {
	local pki=$STATE/pki
	mkdir -p "$pki"
	(
		cd "$pki"
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=airlock-ci-k8s-ca" -keyout ca.key -out ca.crt 2>/dev/null
		openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
		printf 'subjectAltName=IP:%s,IP:127.0.0.1,IP:10.216.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' "$HOST_IP" >san.ext
		openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out apiserver.crt 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
		openssl rand -hex 24 >admin.token
		printf '%s,airlock-admin,airlock-admin,system:masters\n' "$(cat admin.token)" >tokens.csv
		chmod 0600 ca.key apiserver.key sa.key admin.token tokens.csv
	)
	umask 077
	cat >"$KUBECONFIG_PATH" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: airlock-ci
  cluster:
    server: $API_URL
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: airlock-admin
  user:
    token: $(cat "$pki/admin.token")
contexts:
- name: airlock-ci
  context:
    cluster: airlock-ci
    user: airlock-admin
    namespace: default
current-context: airlock-ci
EOF
	umask 022
}

make_network() {
	local node i ip other
	ip netns add "$SWITCH"
	ip -n "$SWITCH" link set lo up
	ip -n "$SWITCH" link add br0 type bridge
	ip -n "$SWITCH" link set br0 up
	ip link add "$HOST_VETH" type veth peer name host netns "$SWITCH"
	ip -n "$SWITCH" link set host master br0 up
	ip addr add "$HOST_IP/24" dev "$HOST_VETH"
	ip link set "$HOST_VETH" up
	for node in "${NODES[@]}"; do
		i=$(node_index "$node")
		ip="$(node_ip "$node")"
		ip netns add "$node"
		ip -n "$node" link set lo up
		ip -n "$SWITCH" link add "n$i" type veth peer name eth0 netns "$node"
		ip -n "$SWITCH" link set "n$i" master br0 up
		ip -n "$node" addr add "$ip/24" dev eth0
		ip -n "$node" link set eth0 up
		ip -n "$node" route add default via "$HOST_IP"
		ip netns exec "$node" sysctl -qw net.ipv4.ip_forward=1
		ip route add "$(node_subnet "$node")" via "$ip" dev "$HOST_VETH"
	done
	# Pods reach pods on the other node through that node's address.
	for node in "${NODES[@]}"; do
		for other in "${NODES[@]}"; do
			[ "$node" = "$other" ] || ip -n "$node" route add "$(node_subnet "$other")" via "$(node_ip "$other")"
		done
	done
}

start_control_plane() {
	local pki=$STATE/pki
	mkdir -p "$DATA/etcd"
	start etcd "" "$CACHE/etcd" --name airlock-ci --data-dir "$DATA/etcd" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
		--initial-cluster airlock-ci=http://127.0.0.1:23800 --listen-metrics-urls ""
	wait_until 60 "etcd healthy" curl -sf --max-time 2 "$ETCD_URL/health" ||
		{ tail -20 "$LOGS/etcd.log" >&2; die "etcd did not answer within 60 s"; }
	start_apiserver
	start kube-scheduler "" "$CACHE/kube-scheduler" --kubeconfig "$KUBECONFIG_PATH" \
		--leader-elect=false --secure-port=0
	start kube-controller-manager "" "$CACHE/kube-controller-manager" --kubeconfig "$KUBECONFIG_PATH" \
		--leader-elect=false --secure-port=0 --service-account-private-key-file "$pki/sa.key" \
		--root-ca-file "$pki/ca.crt" --service-cluster-ip-range "$SERVICE_RANGE" \
		--use-service-account-credentials=false
}

start_apiserver() {
	local pki=$STATE/pki
	start kube-apiserver "" "$CACHE/kube-apiserver" --etcd-servers "$ETCD_URL" \
		--bind-address "$HOST_IP" --advertise-address "$HOST_IP" --secure-port "$API_PORT" \
		--tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
		--authorization-mode AlwaysAllow --service-cluster-ip-range "$SERVICE_RANGE" \
		--service-account-issuer https://kubernetes.default.svc \
		--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
		--kubelet-preferred-address-types InternalIP --allow-privileged=false
	wait_until 120 "kube-apiserver ready" api /readyz ||
		{ tail -20 "$LOGS/kube-apiserver.log" >&2; die "kube-apiserver not ready within 120 s"; }
}

# A second node on one host needs its own cgroup root, present in every v1 hierarchy.
make_cgroup_root() {
	local node=$1 h
	for h in /sys/fs/cgroup/*/; do
		[ -d "$h" ] || continue
		mkdir -p "$h$node"
		if [ -f "$h/cpuset.cpus" ]; then
			cat "$h/cpuset.cpus" >"$h$node/cpuset.cpus"
			cat "$h/cpuset.mems" >"$h$node/cpuset.mems"
		fi
	done
}

write_node_config() {
	local node=$1 dir=$STATE/$1
	mkdir -p "$dir/cni" "$DATA/$node"
	cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$DATA/$node/containerd"
state = "$dir/containerd-state"
[grpc]
  address = "$dir/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DATA/$node/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
EOF
	cat >"$dir/cni/10-airlock.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "airlock-pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "subnet": "$(node_subnet "$node")",
        "dataDir": "$DATA/$node/cni-ipam",
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "loopback" }
  ]
}
EOF
	cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: /$node
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$dir/containerd.sock
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
podLogsDir: $DATA/$node/pod-logs
volumePluginDir: $DATA/$node/volume-plugins
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

start_node() {
	local node=$1 dir=$STATE/$1
	make_cgroup_root "$node"
	write_node_config "$node"
	start "$node-containerd" "$node" /usr/bin/containerd --config "$dir/containerd.toml"
	wait_until 60 "$node: containerd up" ctr -a "$dir/containerd.sock" version ||
		{ tail -20 "$LOGS/$node-containerd.log" >&2; die "$node: containerd did not answer within 60 s"; }
	import_images "$node"
	start "$node-kubelet" "$node" "$CACHE/kubelet" --config "$dir/kubelet.yaml" \
		--kubeconfig "$KUBECONFIG_PATH" --hostname-override "$node" --node-ip "$(node_ip "$node")" \
		--root-dir "$DATA/$node/kubelet" --cert-dir "$dir/kubelet-pki"
}

node_ready() {
	api "/api/v1/nodes/$1" | python3 -c '
import json, sys
n = json.load(sys.stdin)
ok = any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
taints = [t for t in n["spec"].get("taints", []) if t["key"].startswith("node.kubernetes.io/")]
sys.exit(0 if ok and not taints else 1)'
}

cluster_healthy() {
	[ -f "$STATE/READY" ] || return 1
	local name bin node
	for name in etcd kube-apiserver kube-scheduler kube-controller-manager; do
		is_ours "$(pidfile_pid "$name")" "$CACHE/$name" || return 1
	done
	for node in "${NODES[@]}"; do
		is_ours "$(pidfile_pid "$node-containerd")" /usr/bin/containerd || return 1
		is_ours "$(pidfile_pid "$node-kubelet")" "$CACHE/kubelet" || return 1
		node_ready "$node" || return 1
	done
}

cmd_up() {
	[ "$(id -u)" = 0 ] || die "up needs root"
	if cluster_healthy 2>/dev/null; then
		say "already up ($(cat "$STATE/READY"))"
		return 0
	fi
	ensure_packages
	cmd_build
	image_tars
	cmd_down
	local start node
	start=$(now)
	mkdir -p "$STATE" "$DATA" "$LOGS"
	chmod 0700 "$STATE"
	: >"$STATE/sysctls"
	for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")" >>"$STATE/sysctls"; done
	for node in "${NODES[@]}"; do : >"$LOGS/$node-containerd.log"; : >"$LOGS/$node-kubelet.log"; done
	for s in etcd kube-apiserver kube-scheduler kube-controller-manager; do : >"$LOGS/$s.log"; done
	make_pki
	make_network
	start_control_plane
	for node in "${NODES[@]}"; do start_node "$node"; done
	for node in "${NODES[@]}"; do
		wait_until 180 "$node Ready" node_ready "$node" ||
			{ tail -30 "$LOGS/$node-kubelet.log" >&2; die "$node not Ready within 180 s"; }
	done
	wait_until 120 "default service account" api /api/v1/namespaces/default/serviceaccounts/default ||
		{ tail -20 "$LOGS/kube-controller-manager.log" >&2; die "no default service account within 120 s"; }
	echo "ready $(date -u +%FT%TZ) in $(since "$start") s: kubeconfig $KUBECONFIG_PATH, image $IMAGE, nodes ${NODES[*]}" >"$STATE/READY"
	say "$(cat "$STATE/READY")"
}

# ---------------------------------------------------------------------------------------------
# down

# kill_in_netns NS: SIGKILL every process whose network namespace is NS.
kill_in_netns() {
	local p
	[ -e "/run/netns/$1" ] || return 0
	for p in $(ip netns pids "$1" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
}

# kill_cgroup_tree NODE: SIGKILL every process in the node's cgroup root (its pods' containers).
kill_cgroup_tree() {
	local node=$1 h f pid n
	for n in 1 2 3 4 5; do
		local found=0
		for h in /sys/fs/cgroup/*/"$node"; do
			[ -d "$h" ] || continue
			while IFS= read -r f; do
				# A pod's cgroup may go away between find and read: nothing left to kill there.
				for pid in $(cat "$f" 2>/dev/null); do
					found=1
					kill -KILL "$pid" 2>/dev/null || true
				done
			done < <(find "$h" -name cgroup.procs 2>/dev/null)
		done
		[ "$found" = 1 ] || return 0
		sleep 0.2
	done
}

remove_cgroup_tree() {
	local h
	for h in /sys/fs/cgroup/*/"$1"; do
		[ -d "$h" ] || continue
		find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
		[ ! -d "$h" ] || say "could not remove cgroup $h"
	done
}

# Our pods' network namespaces: containerd names them cni-* under /run/netns; ours hold an
# address from our pod range, or no address at all when their setup never finished.
remove_pod_netns() {
	local ns addrs
	for ns in /run/netns/cni-*; do
		[ -e "$ns" ] || continue
		ns=${ns#/run/netns/}
		addrs=$(ip -n "$ns" -4 -o addr show scope global 2>/dev/null | awk '{print $4}')
		if [ -z "$addrs" ] || echo "$addrs" | grep -q '^10\.215\.'; then
			kill_in_netns "$ns"
			ip netns delete "$ns" 2>/dev/null || umount -l "/run/netns/$ns" 2>/dev/null || true
			rm -f "/run/netns/$ns"
		fi
	done
}

unmount_under() {
	local m
	for m in $(awk -v a="$1/" '{ if (index($5 "/", a) == 1) print $5 }' /proc/self/mountinfo | sort -r -u); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "could not unmount $m"
	done
}

cmd_down() {
	[ "$(id -u)" = 0 ] || die "down needs root"
	local node s
	for node in "${NODES[@]}"; do stop_named "$node-kubelet" "$CACHE/kubelet"; done
	for node in "${NODES[@]}"; do kill_cgroup_tree "$node"; done
	remove_pod_netns
	for node in "${NODES[@]}"; do
		stop_named "$node-containerd" /usr/bin/containerd
		# Shims and anything else still running in the node's namespace.
		kill_in_netns "$node"
	done
	for s in kube-controller-manager kube-scheduler kube-apiserver etcd; do stop_named "$s" "$CACHE/$s"; done
	sleep 0.2
	for node in "${NODES[@]}"; do kill_cgroup_tree "$node"; done
	unmount_under "$DATA"
	unmount_under "$STATE"
	remove_pod_netns
	for node in "${NODES[@]}" "$SWITCH"; do
		if [ -e "/run/netns/$node" ]; then
			kill_in_netns "$node"
			ip netns delete "$node" 2>/dev/null || true
		fi
	done
	ip link delete "$HOST_VETH" 2>/dev/null || true
	for node in "${NODES[@]}"; do remove_cgroup_tree "$node"; done
	if [ -f "$STATE/sysctls" ]; then
		while IFS= read -r s; do [ -z "$s" ] || sysctl -qw "$s"; done <"$STATE/sysctls"
	fi
	rm -rf "$STATE" "$DATA"
	# kubelet's device-plugin socket and container log links have fixed paths too.
	[ ! -S /var/lib/kubelet/device-plugins/kubelet.sock ] || rm -f /var/lib/kubelet/device-plugins/kubelet.sock
	if [ -d /var/log/containers ]; then find /var/log/containers -type l -lname "$DATA/*" -delete 2>/dev/null || true; fi
	for s in "${KUBELET_HOST_DIRS[@]}"; do rmdir "$s" 2>/dev/null || true; done
}

# ---------------------------------------------------------------------------------------------

cmd_env() {
	echo "export AIRLOCK_K8S_KUBECONFIG=$KUBECONFIG_PATH AIRLOCK_K8S_IMAGE=$IMAGE AIRLOCK_K8S_NAMESPACE=default AIRLOCK_K8S_NODES='${NODES[*]}' AIRLOCK_K8S_SCRIPT=$SCRIPT"
}

cmd_restart_apiserver() {
	[ "$(id -u)" = 0 ] || die "restart-apiserver needs root"
	[ -f "$STATE/READY" ] || die "the cluster is not up"
	local start
	start=$(now)
	# A short grace: a graceful stop waits for long-running requests (watches, exec streams)
	# for a minute, and a restart that long would also make the nodes NotReady.
	stop_named kube-apiserver "$CACHE/kube-apiserver" 3
	start_apiserver
	say "kube-apiserver restarted in $(since "$start") s"
}

case "${1:-}" in
build) cmd_build ;;
images) cmd_images ;;
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
restart-apiserver) cmd_restart_apiserver ;;
*) die "usage: $0 build|images|up|down|env|restart-apiserver" ;;
esac
