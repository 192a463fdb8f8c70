package helper

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
)

// fileDir returns a scratch directory with symlinks resolved, as the policy hands paths over.
func fileDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var fe *backend.FileError
	if !errors.As(err, &fe) || fe.Code != code {
		t.Fatalf("error %v, want file error %s", err, code)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileRoads runs a test with openat2 and with the component walk that replaces it on old
// kernels.
func fileRoads(t *testing.T, fn func(t *testing.T, c *Client)) {
	for _, road := range []string{"openat2", "walk"} {
		t.Run(road, func(t *testing.T) {
			if road == "walk" {
				noOpenat2.Store(true)
				t.Cleanup(func() { noOpenat2.Store(false) })
			}
			fn(t, pair(t))
		})
	}
}

func TestFileReadAndWindow(t *testing.T) {
	fileRoads(t, func(t *testing.T, c *Client) {
		d := fileDir(t)
		mustWrite(t, filepath.Join(d, "a.txt"), "one\ntwo\nthree\n")
		res, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileRead, Path: d + "/a.txt", Root: d, MaxBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte("one\ntwo\nthree\n"))
		if string(res.Data) != "one\ntwo\nthree\n" || res.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("read = %q %s", res.Data, res.SHA256)
		}
		res, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWindow, Path: d + "/a.txt", First: 2, Last: 2, MaxBytes: 100})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Data) != "two\n" || res.Lines != 3 || res.Size != 14 || res.Binary {
			t.Fatalf("window = %+v", res)
		}
		_, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileRead, Path: d + "/a.txt", MaxBytes: 5})
		wantCode(t, err, backend.FileTooLarge)
		_, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileRead, Path: d + "/missing", MaxBytes: 5})
		wantCode(t, err, backend.FileNotFound)
		mustWrite(t, filepath.Join(d, "bin"), "a\x00b")
		res, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWindow, Path: d + "/bin", First: 1, MaxBytes: 100})
		if err != nil || !res.Binary || len(res.Data) != 0 {
			t.Fatalf("binary window = %+v, %v", res, err)
		}
	})
}

func TestFileRefusals(t *testing.T) {
	fileRoads(t, func(t *testing.T, c *Client) {
		d := fileDir(t)
		out := fileDir(t)
		mustWrite(t, filepath.Join(out, "secret"), "SECRET")
		if err := os.Mkdir(filepath.Join(d, "real"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(d, "real", "f"), "inner")
		for _, l := range [][2]string{{out + "/secret", "file-link"}, {out, "dir-link"}, {"real", "inner-link"}} {
			if err := os.Symlink(l[0], filepath.Join(d, l[1])); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Link(filepath.Join(out, "secret"), filepath.Join(d, "hard")); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			op, path, code string
		}{
			{backend.FileRead, d + "/file-link", backend.FileSymlink},
			{backend.FileRead, d + "/dir-link/secret", backend.FileSymlink},
			{backend.FileRead, d + "/inner-link/f", backend.FileSymlink}, // a link that stays inside is refused too
			{backend.FileRead, d + "/hard", backend.FileHardLink},
			{backend.FileWindow, d + "/hard", backend.FileHardLink},
			{backend.FileWrite, d + "/hard", backend.FileHardLink},
			{backend.FileRead, d + "/fifo", backend.FileNotRegular},
			{backend.FileRead, d + "/real", backend.FileNotRegular},
			{backend.FileRead, d + "/real/f/x", backend.FileNotDir},
			{backend.FileWrite, d + "/file-link", backend.FileSymlink},
			{backend.FileWrite, d + "/dir-link/new", backend.FileSymlink},
			{backend.FileWrite, d + "/dir-link/deeper/new", backend.FileSymlink},
			{backend.FileRead, d + "/../" + filepath.Base(out) + "/secret", backend.FileInvalid},
		}
		for _, tc := range cases {
			_, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: tc.op, Path: tc.path, Root: d, MaxBytes: 100, Data: []byte("x")})
			if err == nil {
				t.Errorf("%s %s: no error", tc.op, tc.path)
				continue
			}
			var fe *backend.FileError
			if !errors.As(err, &fe) || fe.Code != tc.code {
				t.Errorf("%s %s: %v, want %s", tc.op, tc.path, err, tc.code)
			}
		}
		// A root that is itself a link is refused, as is a path outside the root.
		_, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileRead, Path: d + "/inner-link/f", Root: d + "/inner-link", MaxBytes: 100})
		wantCode(t, err, backend.FileSymlink)
		_, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileRead, Path: out + "/secret", Root: d, MaxBytes: 100})
		wantCode(t, err, backend.FileInvalid)
		if b, _ := os.ReadFile(filepath.Join(out, "secret")); string(b) != "SECRET" {
			t.Errorf("outside file changed: %q", b)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 1 {
			t.Errorf("outside directory has %d entries", len(ents))
		}
	})
}

func TestFileWrite(t *testing.T) {
	fileRoads(t, func(t *testing.T, c *Client) {
		d := fileDir(t)
		p := filepath.Join(d, "x.sh")
		mustWrite(t, p, "old\n")
		if err := os.Chmod(p, 0o750); err != nil {
			t.Fatal(err)
		}
		res, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: p, Root: d, MaxBytes: 100, Data: []byte("new\n")})
		if err != nil || res.Created {
			t.Fatalf("overwrite = %+v, %v", res, err)
		}
		fi, _ := os.Stat(p)
		if b, _ := os.ReadFile(p); string(b) != "new\n" || fi.Mode().Perm() != 0o750 {
			t.Fatalf("after overwrite: %q mode %v", b, fi.Mode())
		}
		// A patch's digest: the old one is refused, the current one accepted.
		sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
		_, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: p, MaxBytes: 100, Data: []byte("p\n"), ExpectSHA256: sum("old\n")})
		wantCode(t, err, backend.FileStale)
		if _, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: p, MaxBytes: 100, Data: []byte("p\n"), ExpectSHA256: sum("new\n")}); err != nil {
			t.Fatal(err)
		}
		_, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: p, MaxBytes: 1, Data: []byte("big")})
		wantCode(t, err, backend.FileTooLarge)
		// The free-space guard: no filesystem here has an exabyte free.
		_, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: p, MaxBytes: 100, Data: []byte("x"), MinFreeBytes: 1 << 60})
		wantCode(t, err, backend.FileTooLarge)
		if b, _ := os.ReadFile(p); string(b) != "p\n" {
			t.Fatalf("a refused write changed the file: %q", b)
		}
		// Missing parents are created; a write of several frames arrives whole.
		big := strings.Repeat("0123456789abcdef", (3*MaxPayload)/16+7)
		deep := filepath.Join(d, "a", "b", "c.txt")
		res, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: deep, Root: d, MaxBytes: int64(len(big)), Data: []byte(big)})
		if err != nil || !res.Created {
			t.Fatalf("create = %+v, %v", res, err)
		}
		if b, _ := os.ReadFile(deep); string(b) != big {
			t.Fatalf("big write: %d bytes back", len(b))
		}
		got, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileRead, Path: deep, MaxBytes: int64(len(big))})
		if err != nil || string(got.Data) != big {
			t.Fatalf("big read: %d bytes, %v", len(got.Data), err)
		}
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".airlock-") {
				t.Errorf("temporary file left behind: %s", e.Name())
			}
		}
	})
}

// TestFileNothingWorldWritable runs with umask 0 (not in parallel: the umask is the
// process's): files and directories the helper creates are still not writable by others.
func TestFileNothingWorldWritable(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	c := pair(t)
	d := fileDir(t)
	p := filepath.Join(d, "new", "f.txt")
	if _, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: p, MaxBytes: 10, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{p, filepath.Dir(p)} {
		fi, err := os.Stat(q)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s is world-writable: %v", q, fi.Mode())
		}
	}
	// A file that already was world-writable keeps its mode: it is the owner's choice.
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWrite, Path: p, MaxBytes: 10, Data: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o666 {
		t.Errorf("mode not kept: %v", fi.Mode())
	}
}

// TestFileSwapRace swaps a file for a symlink to a file outside (and back) while reads run:
// no read may return the outside file's content.
func TestFileSwapRace(t *testing.T) {
	fileRoads(t, func(t *testing.T, c *Client) {
		d := fileDir(t)
		out := fileDir(t)
		mustWrite(t, filepath.Join(out, "secret"), "OUTSIDE")
		p := filepath.Join(d, "f")
		mustWrite(t, p, "inside")
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var swaps atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			link, file := filepath.Join(d, "l.tmp"), filepath.Join(d, "f.tmp")
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = os.Symlink(filepath.Join(out, "secret"), link)
				_ = os.Rename(link, p)
				_ = os.WriteFile(file, []byte("inside"), 0o644)
				_ = os.Rename(file, p)
				swaps.Add(1)
			}
		}()
		leaks, ok, refused, n := 0, 0, 0, 0
		// At least 300 reads each way, and on until the swapper has swapped 100 times.
		for ; n < 300 || swaps.Load() < 100 && n < 100000; n++ {
			for _, op := range []string{backend.FileRead, backend.FileWindow} {
				res, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: op, Path: p, Root: d, First: 1, MaxBytes: 100})
				switch {
				case err != nil:
					refused++
				case strings.Contains(string(res.Data), "OUTSIDE"):
					leaks++
				default:
					ok++
				}
			}
		}
		close(stop)
		wg.Wait()
		t.Logf("%d operations over %d swaps: %d read the file, %d refused, %d outside", 2*n, swaps.Load(), ok, refused, leaks)
		if leaks != 0 {
			t.Fatalf("%d of %d operations returned the outside file", leaks, 2*n)
		}
	})
}

// TestReadLimitedFileThatGrew: a file read whole is read to its end, not to the size fstat
// gave when it was opened: one that grew meanwhile is read in full up to the limit, and
// refused past it; one that shrank gives what is left.
func TestReadLimitedFileThatGrew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() (*regular, unix.Stat_t) {
		t.Helper()
		dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(dfd)
		f, st, err := openRegular(dfd, "f")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f, st
	}
	grow := func(b []byte) {
		t.Helper()
		fh, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	f, st := open()
	grow(bytes.Repeat([]byte("x"), 5000))
	if data, err := readLimited(f, st, 1<<20, "f"); err != nil || len(data) != 5010 || string(data[:10]) != "0123456789" {
		t.Errorf("a file that grew from 10 to 5010 bytes: %d bytes read, %v", len(data), err)
	}
	f, st = open()
	grow([]byte("y"))
	if _, err := readLimited(f, st, 5010, "f"); !isCode(err, backend.FileTooLarge) {
		t.Errorf("a file that grew past the limit: %v, want too_large", err)
	}
	f, st = open()
	if err := os.Truncate(p, 3); err != nil {
		t.Fatal(err)
	}
	if data, err := readLimited(f, st, 1<<20, "f"); err != nil || string(data) != "012" {
		t.Errorf("a file that shrank to 3 bytes: %q, %v", data, err)
	}
}

// TestFileReadEitherSideOfSmallRead: a read and a window of a file just within smallRead
// (answered on the reader) and just past it (read on a goroutine of its own, from the
// descriptor the reader opened) give the whole file and its digest alike.
func TestFileReadEitherSideOfSmallRead(t *testing.T) {
	fileRoads(t, func(t *testing.T, c *Client) {
		d := fileDir(t)
		for _, size := range []int{smallRead, smallRead + 1} {
			body := bytes.Repeat([]byte("x"), size)
			for i := 99; i < size; i += 100 {
				body[i] = '\n'
			}
			p := filepath.Join(d, fmt.Sprintf("f%d", size))
			mustWrite(t, p, string(body))
			sum := sha256.Sum256(body)
			res, err := c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileRead, Path: p, Root: d, MaxBytes: 1 << 20})
			if err != nil || !bytes.Equal(res.Data, body) || res.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("read of %d bytes: %d bytes, %s, %v", size, len(res.Data), res.SHA256, err)
			}
			res, err = c.FileOp(ctxFor(t), backend.FileRequest{Op: backend.FileWindow, Path: p, Root: d, First: 2, Last: 2, MaxBytes: 1 << 20})
			if err != nil || string(res.Data) != string(body[100:200]) || res.Lines != (size+99)/100 || res.Size != int64(size) || res.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("window of %d bytes: %q, %d lines, size %d, %v", size, res.Data, res.Lines, res.Size, err)
			}
		}
	})
}
