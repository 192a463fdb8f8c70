package docker

import (
	"strings"
	"testing"

	"github.com/docker/docker/api/types/system"
)

func TestCheckRuntime(t *testing.T) {
	t.Parallel()
	rt := func(path string, args ...string) system.RuntimeWithStatus {
		return system.RuntimeWithStatus{Runtime: system.Runtime{Path: path, Args: args}}
	}
	info := func(def string, rts map[string]system.RuntimeWithStatus) system.Info {
		return system.Info{DefaultRuntime: def, Runtimes: rts}
	}
	runc := rt("runc")
	for _, tc := range []struct {
		name       string
		info       system.Info
		configured string
		note       string // substring of the note; "" when refused
		refusal    string // substring of the error; "" when accepted
		gVisor     bool   // the container gets gVisor's variant of the seccomp profile
	}{
		{"default runc", info("runc", map[string]system.RuntimeWithStatus{"runc": runc}), "", "runtime: runc (the daemon's default)", "", false},
		{"configured runc", info("runc", map[string]system.RuntimeWithStatus{"runc": runc}), "runc", "runtime: runc (environment.docker.runtime)", "", false},
		{"unknown configured", info("runc", map[string]system.RuntimeWithStatus{"runc": runc, "crun": rt("crun")}), "kata", "",
			`environment.docker.runtime = "kata": the daemon does not know this runtime (it knows crun, runc)`, false},
		{"runsc with --oci-seccomp", info("runc", map[string]system.RuntimeWithStatus{"runc": runc, "runsc": rt("/opt/runsc", "--oci-seccomp")}), "runsc", "gVisor", "", true},
		{"runsc with --oci-seccomp=true", info("runc", map[string]system.RuntimeWithStatus{"runsc": rt("/opt/runsc", "--platform=systrap", "--oci-seccomp=true")}), "runsc", "gVisor", "", true},
		{"runsc with --oci-seccomp as the daemon's default", info("runsc", map[string]system.RuntimeWithStatus{"runsc": rt("/usr/bin/runsc", "--oci-seccomp")}), "", "(the daemon's default): gVisor", "", true},
		{"runsc without --oci-seccomp", info("runc", map[string]system.RuntimeWithStatus{"runsc": rt("/opt/runsc")}), "runsc", "",
			"gVisor without --oci-seccomp, so it would ignore the container's seccomp profile", false},
		{"runsc under another name", info("runc", map[string]system.RuntimeWithStatus{"gvisor": rt("/usr/local/bin/runsc", "--debug")}), "gvisor", "", "without --oci-seccomp", false},
		{"runsc as the daemon's default", info("runsc", map[string]system.RuntimeWithStatus{"runsc": rt("runsc")}), "", "", `(the daemon's default) is gVisor without --oci-seccomp`, false},
		{"runsc as a shim", info("runc", map[string]system.RuntimeWithStatus{"runsc": {Runtime: system.Runtime{Type: "io.containerd.runsc.v1"}}}), "runsc", "", "--oci-seccomp cannot be checked", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt, err := checkRuntime(tc.info, tc.configured)
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("err = %v, want it to contain %q (note %q)", err, tc.refusal, rt.note)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !strings.Contains(rt.note, tc.note) || rt.gVisor != tc.gVisor {
				t.Errorf("note = %q, gVisor %v; want it to contain %q, gVisor %v", rt.note, rt.gVisor, tc.note, tc.gVisor)
			}
		})
	}
}
