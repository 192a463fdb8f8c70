package differential

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// The real shells, found on the host. bash-static and dash are Debian packages; busybox is
// Debian's dynamic `busybox` package, unpacked by .ci/test, because the `busybox-static`
// build is made with FEATURE_SH_STANDALONE: its ash runs every applet name (rm, cat, sh…)
// inside itself without a PATH lookup, so no recorder would ever see them. Both builds come
// from the same source and parse alike; only the dynamic one executes what it runs.
var shellSources = map[string][]string{
	"bash":    {os.Getenv("AIRLOCK_DIFF_BASH"), "/bin/bash-static", "/usr/bin/bash-static"},
	"dash":    {os.Getenv("AIRLOCK_DIFF_DASH"), "/usr/bin/dash", "/bin/dash"},
	"busybox": {os.Getenv("AIRLOCK_DIFF_BUSYBOX"), "/var/cache/airlock-ci/busybox/bin/busybox"},
}

// imageRepo is the repository of the test image; its tag and a label carry the hash of its
// whole content, so a changed recorder, shell or name list makes a new image and an
// unchanged one is imported only once per daemon.
const (
	imageRepo  = "airlock-test/differential"
	labelHash  = "airlock.test.differential.hash"
	labelOwner = "airlock.test"
	ownerValue = "differential"
	imagePATH  = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// libDirs is where the dynamic shells' libraries are looked for on the host.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib", "/usr/lib"}

var imageBuild struct {
	sync.Mutex
	ref string
}

// shellImage returns the differential test image, building and importing it once.
func shellImage(t testing.TB, cli *client.Client, names []string) string {
	t.Helper()
	imageBuild.Lock()
	defer imageBuild.Unlock()
	if imageBuild.ref != "" {
		return imageBuild.ref
	}
	shells := map[string]string{}
	for name, cands := range shellSources {
		for _, c := range cands {
			if c == "" {
				continue
			}
			if _, err := os.Stat(c); err == nil {
				shells[name] = c
				break
			}
		}
		if shells[name] == "" {
			missing(t, fmt.Sprintf("no %s for the differential image (tried %s; .ci/test installs them)", name, strings.Join(slices.DeleteFunc(slices.Clone(cands), func(s string) bool { return s == "" }), ", ")))
		}
	}
	probe := probeBuild.Path(t)
	tarball, err := rootfs(probe, shells, names)
	if err != nil {
		t.Fatalf("differential image: %v", err)
	}
	imageBuild.ref = importImage(t, cli, tarball)
	return imageBuild.ref
}

// importImage imports a root filesystem as an image tagged with its hash, unless the
// daemon has it already.
func importImage(t testing.TB, cli *client.Client, tarball []byte) string {
	t.Helper()
	sum := sha256.Sum256(tarball)
	hash := hex.EncodeToString(sum[:])
	ref := imageRepo + ":" + hash[:16]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if info, err := cli.ImageInspect(ctx, ref); err == nil && info.Config != nil && info.Config.Labels[labelHash] == hash {
		return ref
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(tarball), SourceName: "-"}, ref, image.ImportOptions{
		Changes: []string{"ENV PATH=" + imagePATH, "LABEL " + labelHash + "=" + hash + " " + labelOwner + "=" + ownerValue},
		Message: "airlock differential shells",
	})
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	_, err = io.Copy(io.Discard, rc)
	_ = rc.Close()
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	return ref
}

// missing skips the test for want of a part, or fails it when CI requires Docker.
func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("AIRLOCK_REQUIRE_DOCKER") == "1" {
		t.Fatal(msg + " (AIRLOCK_REQUIRE_DOCKER=1)")
	}
	t.Skip(msg)
}

// probeBuild is the recorder and driver: static, so that it needs nothing in the image.
var probeBuild = buildtest.Program{
	Pkg:    "github.com/airlock-dev/airlock/shellrisk/differential/probe",
	Prefix: "airlock-diff-probe-",
	Env:    []string{"CGO_ENABLED=0"},
	Flags:  []string{"-trimpath"},
}

// rootfs writes the image's root filesystem as a tar stream, in a fixed order with fixed
// times so that the same parts give the same bytes (and the same hash):
//
//	/usr/bin/NAME      a hard link to the recorder, for every name
//	/bin, /sbin, /usr/sbin, /usr/local/bin, /usr/local/sbin  links to /usr/bin, so that
//	                   /bin/rm and /usr/bin/env are recorders too
//	/shells/SHELL      the real shells, off PATH, with the dynamic ones' loader and libraries
//	/.probe/driver, /.probe/idle  the driver and the container's main process
func rootfs(probe string, shells map[string]string, names []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mtime})
	}
	link := func(name, target string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: mtime})
	}
	hard := func(name, target string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o755, ModTime: mtime})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	hostFile := func(name, src string) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return file(name, 0o755, b)
	}
	var steps []func() error
	add := func(f func() error) { steps = append(steps, f) }
	for _, d := range []string{"dev", "proc", "sys", "etc", "usr", "usr/bin", "usr/local", "shells", ".probe", "lib", "lib64"} {
		add(func() error { return dir(d, 0o755) })
	}
	for _, d := range []string{"tmp", "rec"} {
		add(func() error { return dir(d, 0o1777) })
	}
	add(func() error { return link("bin", "usr/bin") })
	add(func() error { return link("sbin", "usr/bin") })
	add(func() error { return link("usr/sbin", "bin") })
	add(func() error { return link("usr/local/bin", "../bin") })
	add(func() error { return link("usr/local/sbin", "../bin") })
	add(func() error {
		return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"))
	})
	add(func() error { return file("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")) })
	add(func() error { return hostFile(".probe/driver", probe) })
	add(func() error { return hard(".probe/idle", ".probe/driver") })
	add(func() error { return hostFile(".probe/rec", probe) })
	for _, n := range names {
		add(func() error { return hard("usr/bin/"+n, ".probe/rec") })
	}
	libs := map[string]bool{}
	for _, sh := range slices.Sorted(maps.Keys(shells)) {
		src := shells[sh]
		add(func() error { return hostFile("shells/"+sh, src) })
		deps, err := elfDeps(src)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		for _, d := range deps {
			libs[d] = true
		}
	}
	made := map[string]bool{"lib": true, "lib64": true, "usr": true}
	for _, l := range slices.Sorted(maps.Keys(libs)) {
		rel := strings.TrimPrefix(l, "/")
		var parents []string
		for d := filepath.Dir(rel); d != "." && !made[d]; d = filepath.Dir(d) {
			made[d] = true
			parents = append(parents, d)
		}
		for _, d := range slices.Backward(parents) {
			add(func() error { return dir(d, 0o755) })
		}
		add(func() error {
			real, err := filepath.EvalSymlinks(l)
			if err != nil {
				return err
			}
			return hostFile(strings.TrimPrefix(l, "/"), real)
		})
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// elfDeps lists the loader and the shared libraries (transitively) a dynamic executable
// needs, by the paths the loader finds them at; a static one needs none.
func elfDeps(path string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var visit func(p string, interp bool) error
	visit = func(p string, interp bool) error {
		f, err := elf.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP || !interp {
				continue
			}
			b, err := io.ReadAll(prog.Open())
			if err != nil {
				return err
			}
			ip := string(bytes.TrimRight(b, "\x00"))
			if !seen[ip] {
				seen[ip] = true
				out = append(out, ip)
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return err
		}
		for _, n := range needed {
			found := ""
			for _, d := range libDirs {
				if _, err := os.Stat(filepath.Join(d, n)); err == nil {
					found = filepath.Join(d, n)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("library %s not found in %s", n, strings.Join(libDirs, ", "))
			}
			if seen[found] {
				continue
			}
			seen[found] = true
			out = append(out, found)
			if err := visit(found, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(path, true); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// recorderNames are the program names the image answers with a recorder: the list in
// testdata, busybox's applets and the programs extra names. A name the image lacks is
// still caught, by the shell's "not found" diagnostic (see probe).
func recorderNames(t testing.TB, extra []string) []string {
	t.Helper()
	set := map[string]bool{}
	f, err := os.Open(filepath.Join("testdata", "programs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, n := range strings.Fields(line) {
			set[n] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range extra {
		set[n] = true
	}
	var out []string
	for n := range set {
		if n != "" && !strings.ContainsAny(n, "/\x00") && n != "." && n != ".." {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// busyboxApplets lists the applets of the image's busybox.
func busyboxApplets(t testing.TB) []string {
	t.Helper()
	for _, c := range shellSources["busybox"] {
		if c == "" {
			continue
		}
		if out, err := exec.Command(c, "--list").Output(); err == nil {
			return strings.Fields(string(out))
		}
	}
	return nil
}
