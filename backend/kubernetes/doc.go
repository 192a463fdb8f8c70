// Package kubernetes runs commands in a hardened pod per session on a Kubernetes cluster,
// through client-go's REST client (never kubectl) with a scheme of only the API groups it
// calls, not the clientset: see api.go for why.
//
// It is the Docker backend's shape with pods instead of containers, for users who run
// sandboxes on the cluster they already operate. Each session gets one plain pod labelled
// with its owner, session and configuration fingerprint (the SHA-256 of the pod spec, the
// network mode, the session and the helper binary's digest): a later process of the same
// named session finds the pod by name and reuses it only when the fingerprint label
// matches. The pod is hardened by default: a fixed non-root uid, no privilege escalation,
// every capability dropped, seccomp RuntimeDefault, a read-only root filesystem with
// writable emptyDirs for the workspace (or a claim per session, see volume.go), /tmp and
// the helper, CPU and memory limits always set, no service-account token, no service links, and no variable from the host: each
// command's environment is the image's plus the passthrough allowlist, secrets never.
//
// [network] mode "none" is a deny-all NetworkPolicy, which only some network plugins
// enforce; a plain bridge plugin ignores it. So mode none is not silently weaker: by default
// ("detect") the first pod of a process proves enforcement — the API server is reachable
// from it before its policy exists and not after — and a pod that cannot prove it is
// refused with an error saying so; "assume" takes the operator's word. Mode "allowlist"
// is the same deny-all policy, and the egress proxy is reached only through the helper's
// exec stream, which carries each command's connections back to Airlock (egress.go), so no
// address of Airlock's host need be open to the cluster.
//
// Commands and file tools go to the resident helper (package helper, the airlock binary
// itself) on one long-lived exec stream per session: WebSocket, falling back to SPDY only
// when the upgrade is refused, since a fallback on any error would run a command twice. The
// image needs no Go: the static helper is copied in over exec, once per pod, and checked by
// SHA-256. The helper kills each command's whole process tree at its timeout, inside the pod.
//
// Faults are repaired on the next call: a pod deleted from outside, evicted or lost with its
// node is replaced (the Result's notes say the environment was recreated), and a helper
// whose stream broke with an API-server restart is started again in the same pod. A pod
// that cannot run is deleted and the error names the cause from its status and events.
// Every API call and wait has a deadline. [GC] (airlock gc) deletes pods whose session
// ended or whose idle TTL passed.
//
// A warm pool (warm_pool = N; the pool itself is package envpool's) keeps N pods running
// with the helper started, labelled airlock.dev/pool=member. Pods cannot be renamed, so a
// claim is what the API server makes atomic instead: one update of the pod's labels (pool
// label off, session label on) carrying the resourceVersion read, which fails with a
// Conflict for every claimer but the first (pool.go).
package kubernetes
