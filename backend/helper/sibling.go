package helper

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// HelperName is the file name of the helper binary (cmd/airlock-helper) that airlock looks
// for beside its own executable.
const HelperName = "airlock-helper"

// sourceMarker precedes the source fingerprint in every binary that links this package, so
// that a binary's fingerprint can be read from its bytes without running it. The record is
// one string constant, so the linker lays it out whole; the server's hello sends it, which
// keeps it in every helper.
const sourceMarker = "airlock-helper-source/sha256:"

const sourceRecord = sourceMarker + SourceFingerprint

// sourceRecorded is sourceRecord as data: a variable the server reads at run time, so that
// the whole record, marker and all, is in the binary (a constant sliced at compile time
// could leave only the fingerprint).
var sourceRecorded = sourceRecord

// Sibling returns the airlock-helper beside the running executable when it may stand in for
// it as the helper: a regular executable file owned by root or this user that no one else
// may write, built by the same Go version from the same source (SourceFingerprint: the
// SHA-256 of the helper's own packages and the versions of what they link, which
// TestSourceFingerprint keeps current). Otherwise path is "" and why says what was found,
// or is "" too when there is nothing beside airlock. It is decided once per process.
func Sibling() (path, why string) { return sibling() }

var sibling = sync.OnceValues(func() (string, string) {
	exe, err := os.Executable()
	if err != nil || strings.HasSuffix(exe, ".test") {
		return "", ""
	}
	return checkSibling(filepath.Join(filepath.Dir(exe), HelperName))
})

func checkSibling(p string) (string, string) {
	fi, err := os.Stat(p)
	if os.IsNotExist(err) {
		return "", ""
	}
	if err != nil {
		return "", fmt.Sprintf("%s: %v", p, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return "", p + " is not an executable file"
	case fi.Mode()&0o022 != 0:
		return "", p + " may be written by others than its owner"
	case st == nil || (st.Uid != 0 && int(st.Uid) != os.Getuid()):
		return "", p + " is owned by neither root nor this user"
	}
	data, unmap, err := mapFile(p, fi.Size())
	if err != nil {
		return "", fmt.Sprintf("%s: %v", p, err)
	}
	defer unmap()
	if got := recordIn(constantsOf(data)); got != SourceFingerprint {
		if got == "" {
			return "", p + " is not an airlock helper of this version (no source fingerprint)"
		}
		return "", fmt.Sprintf("%s is built from other source (fingerprint %.12s, airlock's %.12s)", p, got, SourceFingerprint)
	}
	bi, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Sprintf("%s: build info: %v", p, err)
	}
	if bi.GoVersion != runtime.Version() {
		return "", fmt.Sprintf("%s is built with %s, airlock with %s", p, bi.GoVersion, runtime.Version())
	}
	return p, ""
}

// constantsOf returns the bytes of an ELF binary's read-only data (.rodata), where the linker
// puts string constants and so the source record, or all of data when there is none. The
// helper is 6.6 MB and its .rodata 0.6 MB: searching the whole file faulted in every page of
// it, 2-3 ms of each cold airlock's start here.
func constantsOf(data []byte) []byte {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return data
	}
	s := f.Section(".rodata")
	if s == nil || s.Type == elf.SHT_NOBITS || s.Offset+s.Size > uint64(len(data)) {
		return data
	}
	return data[s.Offset : s.Offset+s.Size]
}

// recordIn returns the source fingerprint recorded in a binary's bytes, or "": the first
// marker followed by 64 lower-case hex digits.
func recordIn(data []byte) string {
	marker := []byte(sourceMarker)
	for {
		i := bytes.Index(data, marker)
		if i < 0 {
			return ""
		}
		data = data[i+len(marker):]
		if len(data) >= len(SourceFingerprint) && isHex(data[:len(SourceFingerprint)]) {
			return string(data[:len(SourceFingerprint)])
		}
	}
}

func isHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// SiblingNote says which binary runs as the helper when a sibling was considered, for
// Describe and doctor; "" when there is none beside airlock.
func SiblingNote() string {
	p, why := Sibling()
	switch {
	case p != "":
		return "the helper runs from " + p + " (the same source as airlock, a few MB that start in milliseconds)"
	case why != "":
		return "the helper is airlock itself, not " + HelperName + " beside it: " + why
	}
	return ""
}

// mapFile maps p read-only: the helper's bytes are searched once, and a copy on the heap
// would stay in the process's footprint.
func mapFile(p string, size int64) ([]byte, func(), error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if size <= 0 {
		return nil, nil, fmt.Errorf("empty file")
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("map: %w", err)
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
