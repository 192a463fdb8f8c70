package helper

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

func searchLines(t *testing.T, c *Client, req backend.FileRequest) []string {
	t.Helper()
	req.Op = backend.FileSearch
	if req.MaxBytes == 0 {
		req.MaxBytes = 1 << 20
	}
	res, err := c.FileOp(context.Background(), req)
	if err != nil {
		t.Fatalf("search %+v: %v", req, err)
	}
	var out []string
	for _, l := range strings.Split(string(res.Data), "\n") {
		if l != "" {
			out = append(out, strings.ReplaceAll(strings.TrimPrefix(l, req.Path+"/"), "\x00", ":"))
		}
	}
	sort.Strings(out)
	if res.Lines != len(out) {
		t.Errorf("Lines %d, %d records", res.Lines, len(out))
	}
	return out
}

func TestFileSearch(t *testing.T) {
	fileRoads(t, func(t *testing.T, c *Client) {
		d := fileDir(t)
		out := fileDir(t)
		mustWrite(t, filepath.Join(out, "secret.txt"), "needle outside\n")
		os.MkdirAll(filepath.Join(d, "sub", "deep"), 0o755)
		os.MkdirAll(filepath.Join(d, ".git"), 0o755)
		mustWrite(t, filepath.Join(d, "a.go"), "package a\n// needle one\nx\n")
		mustWrite(t, filepath.Join(d, "sub", "b.txt"), "needle two\nneedle three\n")
		mustWrite(t, filepath.Join(d, "sub", "deep", "c.go"), "no\nnope needle\n")
		mustWrite(t, filepath.Join(d, ".git", "x.go"), "needle in git\n")
		mustWrite(t, filepath.Join(d, ".env"), "needle denied\n")
		mustWrite(t, filepath.Join(d, "bin.dat"), "needle\x00binary\n")
		mustWrite(t, filepath.Join(d, "orig.txt"), "needle linked\n")
		if err := os.Link(filepath.Join(d, "orig.txt"), filepath.Join(d, "hard.txt")); err != nil {
			t.Fatal(err)
		}
		os.Symlink(filepath.Join(out, "secret.txt"), filepath.Join(d, "link.txt"))
		os.Symlink(out, filepath.Join(d, "linkdir"))
		deny := []string{".env"}

		got := searchLines(t, c, backend.FileRequest{Path: d, Root: d, Pattern: `needle (one|two|three|outside)|nope`, DenyNames: deny})
		want := []string{"a.go:2:// needle one", "sub/b.txt:1:needle two", "sub/b.txt:2:needle three", "sub/deep/c.go:2:nope needle"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("search = %q, want %q", got, want)
		}
		// Nothing outside, nothing hard-linked, binary, denied or in .git.
		got = searchLines(t, c, backend.FileRequest{Path: d, Root: d, Pattern: `needle`, DenyNames: deny})
		for _, g := range got {
			if strings.Contains(g, "outside") || strings.Contains(g, "linked") || strings.Contains(g, "denied") || strings.Contains(g, "git") || strings.Contains(g, "binary") {
				t.Errorf("search returned %q", g)
			}
		}
		if len(got) != 4 {
			t.Errorf("search = %q", got)
		}
		if got := searchLines(t, c, backend.FileRequest{Path: d, Root: d, Pattern: `needle`, Glob: "*.go"}); len(got) != 2 {
			t.Errorf("glob *.go = %q", got)
		}
		if got := searchLines(t, c, backend.FileRequest{Path: d, Root: d, Pattern: `needle`, MaxResults: 2}); len(got) != 2 {
			t.Errorf("max_results 2 = %q", got)
		}
		got = searchLines(t, c, backend.FileRequest{Path: d, Root: d, Pattern: `.go`, FilesOnly: true})
		if strings.Join(got, "|") != "a.go|sub/deep/c.go" {
			t.Errorf("files .go = %q", got)
		}
		got = searchLines(t, c, backend.FileRequest{Path: d, Root: d, Pattern: `*.txt`, FilesOnly: true})
		if strings.Join(got, "|") != "sub/b.txt" {
			t.Errorf("files *.txt = %q (no link, no hard link)", got)
		}
		// One file as the path.
		p := filepath.Join(d, "sub", "b.txt")
		if got := searchLines(t, c, backend.FileRequest{Path: p, Root: d, Pattern: `three`}); len(got) != 1 {
			t.Errorf("single file = %q", got)
		}
		// The path itself a link: refused.
		_, err := c.FileOp(context.Background(), backend.FileRequest{Op: backend.FileSearch, Path: filepath.Join(d, "linkdir"), Root: d, Pattern: "needle", MaxBytes: 1 << 20})
		wantCode(t, err, backend.FileSymlink)
		_, err = c.FileOp(context.Background(), backend.FileRequest{Op: backend.FileSearch, Path: d, Root: d, Pattern: "(", MaxBytes: 1 << 20})
		wantCode(t, err, backend.FileInvalid)
	})
}

// TestFileSearchSwapRace: a file and a directory are swapped for links to outside over and
// over while searches run; no search ever returns what lies outside.
func TestFileSearchSwapRace(t *testing.T) {
	fileRoads(t, func(t *testing.T, c *Client) {
		d := fileDir(t)
		out := fileDir(t)
		mustWrite(t, filepath.Join(out, "f.txt"), "needle SECRET\n")
		f := filepath.Join(d, "f.txt")
		sub := filepath.Join(d, "sub")
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				os.Remove(f)
				os.RemoveAll(sub)
				if i%2 == 0 {
					mustWrite(t, f, "needle inside\n")
					os.Mkdir(sub, 0o755)
					mustWrite(t, filepath.Join(sub, "f.txt"), "needle inside\n")
				} else {
					os.Symlink(filepath.Join(out, "f.txt"), f)
					os.Symlink(out, sub)
				}
			}
		}()
		for i := 0; i < 300; i++ {
			res, err := c.FileOp(context.Background(), backend.FileRequest{Op: backend.FileSearch, Path: d, Root: d, Pattern: "needle", MaxBytes: 1 << 20})
			if err != nil {
				continue
			}
			if strings.Contains(string(res.Data), "SECRET") {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("search followed a swapped link: %q", res.Data)
			}
		}
		stop.Store(true)
		wg.Wait()
	})
}
