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
	}{
		{"default runc", info("runc", map[string]system.RuntimeWithStatus{"runc": runc}), "", "runtime: runc (the daemon's default)", ""},
		{"configured runc", info("runc", map[string]system.RuntimeWithStatus{"runc": runc}), "runc", "runtime: runc (environment.docker.runtime)", ""},
		{"unknown configured", info("runc", map[string]system.RuntimeWithStatus{"runc": runc, "crun": rt("crun")}), "kata", "",
			`environment.docker.runtime = "kata": the daemon does not know this runtime (it knows crun, runc)`},
		{"runsc with --oci-seccomp", info("runc", map[string]system.RuntimeWithStatus{"runc": runc, "runsc": rt("/opt/runsc", "--oci-seccomp")}), "runsc", "gVisor", ""},
		{"runsc with --oci-seccomp=true", info("runc", map[string]system.RuntimeWithStatus{"runsc": rt("/opt/runsc", "--platform=systrap", "--oci-seccomp=true")}), "runsc", "gVisor", ""},
		{"runsc without --oci-seccomp", info("runc", map[string]system.RuntimeWithStatus{"runsc": rt("/opt/runsc")}), "runsc", "",
			"gVisor without --oci-seccomp, so it would ignore the container's seccomp profile"},
		{"runsc under another name", info("runc", map[string]system.RuntimeWithStatus{"gvisor": rt("/usr/local/bin/runsc", "--debug")}), "gvisor", "", "without --oci-seccomp"},
		{"runsc as the daemon's default", info("runsc", map[string]system.RuntimeWithStatus{"runsc": rt("runsc")}), "", "", `(the daemon's default) is gVisor without --oci-seccomp`},
		{"runsc as a shim", info("runc", map[string]system.RuntimeWithStatus{"runsc": {Runtime: system.Runtime{Type: "io.containerd.runsc.v1"}}}), "runsc", "", "--oci-seccomp cannot be checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			note, err := checkRuntime(tc.info, tc.configured)
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("err = %v, want it to contain %q (note %q)", err, tc.refusal, note)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !strings.Contains(note, tc.note) {
				t.Errorf("note = %q, want it to contain %q", note, tc.note)
			}
		})
	}
}
