package helper

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Binary is a helper binary as the host sees it: the files that must be installed where the
// helper runs, and how to start it there.
//
// A statically linked airlock is one file. A dynamically linked one — what `go build` makes
// by default on a machine with a C compiler, since package net then links the C library — is
// shipped with its ELF interpreter and the shared libraries it needs, read from its dynamic
// section and found on the host, and started as `INTERP --library-path DIR airlock helper`.
// So the helper runs whatever the image or remote host has, or lacks, for a C library, and the
// fast path does not depend on how airlock was built. The commands the helper starts are
// the environment's own programs: --library-path is an argument of the loader, not a
// variable a child inherits.
type Binary struct {
	// Path is the airlock executable on the host.
	Path string
	// Machine is the ELF machine it was built for.
	Machine elf.Machine
	// Files are what to install, the executable first; for a dynamic binary then the
	// interpreter and the libraries, each under the name the loader looks for.
	Files []File
	// Digest names the whole set: the executable's SHA-256 when it is the only file,
	// otherwise the SHA-256 of every file's name and digest.
	Digest string
	// Interp is the interpreter's file name among Files, "" for a static binary.
	Interp string
	// Size is the sum of the files' sizes.
	Size int64
}

// File is one file of a [Binary].
type File struct {
	// Name is the file's name where it is installed: "airlock" for the executable, the
	// soname (libc.so.6) for a library, the interpreter's base name for the interpreter.
	Name string
	// Path is where it is read from on the host.
	Path   string
	SHA256 string
	Size   int64
}

// Static reports whether the binary is one self-contained file.
func (b *Binary) Static() bool { return b.Interp == "" }

// LinkNote says how the helper is started, for Describe and bench: "" for a static
// binary.
func (b *Binary) LinkNote() string {
	if b.Static() {
		return ""
	}
	names := make([]string, 0, len(b.Files)-1)
	for _, f := range b.Files[1:] {
		names = append(names, f.Name)
	}
	return "airlock is dynamically linked: the helper is shipped with its loader and libraries (" + strings.Join(names, ", ") + ")"
}

// Subcommand is the argument that starts the helper (`airlock helper`, `airlock-helper
// helper`); the backends put it first in the helper's arguments.
const Subcommand = "helper"

// OldSubcommand is the helper's former name, "agent" (a word that means the AI agent
// everywhere else), still accepted by airlock and airlock-helper so that a command line
// written for an older airlock keeps working. Nothing in this tree sends it.
const OldSubcommand = "agent"

// Argv is the command that starts the helper once exe is installed at exeAt and the other
// files in libDir; args follow the executable ([Subcommand], flags).
func (b *Binary) Argv(exeAt, libDir string, args ...string) []string {
	var argv []string
	if !b.Static() {
		argv = []string{path.Join(libDir, b.Interp), "--library-path", libDir}
	}
	return append(append(argv, exeAt), args...)
}

// goarchMachines maps GOARCH names (Docker images' Architecture) to ELF machines.
var goarchMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// unameMachines maps ELF machines to what `uname -m` prints.
var unameMachines = map[elf.Machine][]string{
	elf.EM_X86_64:  {"x86_64", "amd64"},
	elf.EM_AARCH64: {"aarch64", "arm64"},
	elf.EM_386:     {"i386", "i486", "i586", "i686"},
	elf.EM_ARM:     {"armv6l", "armv7l", "armv8l", "arm"},
	elf.EM_RISCV:   {"riscv64"},
	elf.EM_PPC64:   {"ppc64le"},
	elf.EM_S390:    {"s390x"},
}

// CheckGOARCH reports whether the binary runs on a platform named the Go way ("amd64"), as
// Docker names an image's architecture. An unknown name is not refused: the start-up will
// tell.
func (b *Binary) CheckGOARCH(arch string) error {
	if want, ok := goarchMachines[arch]; ok && want != b.Machine {
		return fmt.Errorf("helper binary %s is for %s, the environment is %s", b.Path, b.Machine, arch)
	}
	return nil
}

// CheckUname reports whether the binary runs on a host whose `uname -sm` printed uname
// ("Linux x86_64").
func (b *Binary) CheckUname(uname string) error {
	sys, m, _ := strings.Cut(strings.TrimSpace(uname), " ")
	if sys != "Linux" {
		return fmt.Errorf("the remote runs %q, the helper needs Linux", sys)
	}
	for _, name := range unameMachines[b.Machine] {
		if name == m {
			return nil
		}
	}
	return fmt.Errorf("the remote is %s, helper binary %s is for %s", m, b.Path, b.Machine)
}

var inspected sync.Map // path|size|mtime -> inspection

type inspection struct {
	b   *Binary
	err error
}

// Inspect reads the binary at p: its machine, whether it is static, and for a dynamic one
// the interpreter and libraries to ship with it. Results are cached per path, size and
// modification time. The error says why the binary cannot be a helper.
func Inspect(p string) (*Binary, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("helper binary: %w", err)
	}
	k := fmt.Sprintf("%s|%d|%d", p, fi.Size(), fi.ModTime().UnixNano())
	if v, ok := inspected.Load(k); ok {
		in := v.(inspection)
		return in.b, in.err
	}
	b, err := inspect(p)
	inspected.Store(k, inspection{b, err})
	return b, err
}

func inspect(p string) (*Binary, error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, fmt.Errorf("helper binary %s is not an ELF executable: %w", p, err)
	}
	defer f.Close()
	b := &Binary{Path: p, Machine: f.Machine}
	exe, err := hashFile("airlock", p)
	if err != nil {
		return nil, err
	}
	b.Files = []File{exe}
	interp := interpreter(f)
	if interp == "" {
		b.Digest, b.Size = exe.SHA256, exe.Size
		return b, nil
	}
	real, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return nil, fmt.Errorf("helper binary %s is dynamically linked and its loader %s is missing: %w", p, interp, err)
	}
	b.Interp = path.Base(interp)
	ld, err := hashFile(b.Interp, real)
	if err != nil {
		return nil, err
	}
	b.Files = append(b.Files, ld)
	libs, err := neededLibraries(f, p, b.Interp, f.Machine, filepath.Dir(real))
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		lf, err := hashFile(l.soname, l.path)
		if err != nil {
			return nil, err
		}
		b.Files = append(b.Files, lf)
	}
	h := sha256.New()
	for _, f := range b.Files {
		fmt.Fprintf(h, "%s %s\n", f.Name, f.SHA256)
		b.Size += f.Size
	}
	b.Digest = hex.EncodeToString(h.Sum(nil))
	return b, nil
}

func interpreter(f *elf.File) string {
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		data, err := io.ReadAll(prog.Open())
		if err != nil {
			return ""
		}
		return strings.TrimRight(string(data), "\x00")
	}
	return ""
}

type library struct{ soname, path string }

// neededLibraries finds, breadth first, every shared library the object needs and the
// libraries those need, as the loader would: the object's RUNPATH or RPATH, then the
// directories of /etc/ld.so.conf, the interpreter's own directory and the standard ones.
// Each candidate must be an ELF object for the same machine and class.
func neededLibraries(f *elf.File, p, interp string, m elf.Machine, interpDir string) ([]library, error) {
	dirs := searchDirs(interpDir, m)
	seen := map[string]bool{interp: true}
	var out []library
	type object struct {
		f    *elf.File
		path string
	}
	queue := []object{{f, p}}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		needed, err := o.f.ImportedLibraries()
		own := runpath(o.f, o.path)
		if o.f != f {
			_ = o.f.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("helper binary: read the libraries %s needs: %w", o.path, err)
		}
		for _, name := range needed {
			if seen[name] {
				continue
			}
			seen[name] = true
			lp, lf, err := findLibrary(name, append(own, dirs...), m, o.f.Class)
			if err != nil {
				return nil, fmt.Errorf("helper binary %s is dynamically linked and needs %s, which is not on this host: %w", p, name, err)
			}
			out = append(out, library{soname: name, path: lp})
			queue = append(queue, object{lf, lp})
		}
	}
	return out, nil
}

func runpath(f *elf.File, p string) []string {
	var out []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", filepath.Dir(p)), "$ORIGIN", filepath.Dir(p))
				if d != "" {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

func findLibrary(name string, dirs []string, m elf.Machine, class elf.Class) (string, *elf.File, error) {
	for _, d := range dirs {
		c := filepath.Join(d, name)
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		lf, err := elf.Open(real)
		if err != nil {
			continue
		}
		if lf.Machine == m && lf.Class == class {
			return real, lf, nil // the caller reads lf's own needs, then closes it
		}
		_ = lf.Close()
	}
	return "", nil, fmt.Errorf("looked in %s", strings.Join(dirs, ", "))
}

// multiarch is Debian's directory name for each machine's libraries.
var multiarch = map[elf.Machine]string{
	elf.EM_X86_64: "x86_64-linux-gnu", elf.EM_AARCH64: "aarch64-linux-gnu", elf.EM_386: "i386-linux-gnu",
	elf.EM_ARM: "arm-linux-gnueabihf", elf.EM_RISCV: "riscv64-linux-gnu", elf.EM_PPC64: "powerpc64le-linux-gnu",
	elf.EM_S390: "s390x-linux-gnu",
}

// searchDirs is where the loader looks when an object names no path: ld.so.conf's
// directories, the interpreter's, then the standard ones.
func searchDirs(interpDir string, m elf.Machine) []string {
	var dirs []string
	add := func(d string) {
		for _, x := range dirs {
			if x == d {
				return
			}
		}
		dirs = append(dirs, d)
	}
	for _, d := range ldSoConf("/etc/ld.so.conf", 0) {
		add(d)
	}
	add(interpDir)
	if t, ok := multiarch[m]; ok {
		add("/lib/" + t)
		add("/usr/lib/" + t)
	}
	for _, d := range []string{"/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		add(d)
	}
	return dirs
}

// ldSoConf reads the directories an ld.so.conf names, following its include lines.
func ldSoConf(file string, depth int) []string {
	if depth > 4 {
		return nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "include "):
			pat := strings.TrimSpace(strings.TrimPrefix(line, "include "))
			if !filepath.IsAbs(pat) {
				pat = filepath.Join(filepath.Dir(file), pat)
			}
			matches, _ := filepath.Glob(pat)
			for _, m := range matches {
				out = append(out, ldSoConf(m, depth+1)...)
			}
		case filepath.IsAbs(line):
			out = append(out, line)
		}
	}
	return out
}

// validName is what an installed file may be called: scripts on the remote side name it.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

func hashFile(name, p string) (File, error) {
	if !validName.MatchString(name) {
		return File{}, fmt.Errorf("helper binary: library name %q is not a plain file name", name)
	}
	fh, err := os.Open(p)
	if err != nil {
		return File{}, fmt.Errorf("helper binary: %w", err)
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return File{}, fmt.Errorf("helper binary: read %s: %w", p, err)
	}
	return File{Name: name, Path: p, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}

// ErrTestBinary is returned by [Executable] when the running program is a test binary,
// which cannot serve as the helper.
var ErrTestBinary = errors.New("the running executable is a test binary; set helper_binary")

// Executable returns the configured helper binary; when none is configured, the
// airlock-helper beside the running executable ([Sibling]), or the running executable.
func Executable(configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the running executable: %w", err)
	}
	if strings.HasSuffix(exe, ".test") {
		return "", ErrTestBinary
	}
	if p, _ := Sibling(); p != "" {
		return p, nil
	}
	return exe, nil
}
