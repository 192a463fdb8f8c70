package fileopstest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
)

type args = map[string]any

func read(h *harness, p string) result { return h.call(fileops.ReadFile, args{"path": p}) }
func write(h *harness, p, content string) result {
	return h.call(fileops.WriteFile, args{"path": p, "content": content})
}

func testRelativeAbsolute(t *testing.T, h *harness) {
	out := h.wantOK(write(h, h.ws("a.txt"), "one\ntwo\n"))
	if d := data(t, out); d["action"] != "created" || d["bytes_written"] != float64(8) {
		t.Errorf("write data = %v", d)
	}
	for _, p := range []string{h.ws("a.txt"), h.absWS("a.txt"), h.ws("./sub/../a.txt")} {
		out := h.wantOK(read(h, p))
		if out.Content != "1|one\n2|two\n" {
			t.Errorf("read %s = %q", p, out.Content)
		}
		if d := data(t, out); d["total_lines"] != float64(2) || d["more"] != false || d["path"] != h.ws("a.txt") {
			t.Errorf("read %s data = %v", p, d)
		}
	}
	out = h.wantOK(write(h, h.absWS("a.txt"), "one\nTWO\nthree\n"))
	if d := data(t, out); d["action"] != "overwritten" || d["lines_added"] != float64(2) || d["lines_removed"] != float64(1) {
		t.Errorf("overwrite data = %v", d)
	}
}

func testDotDot(t *testing.T, h *harness) {
	h.wantDenied(read(h, h.ws("../outside/secret.txt")), pathpolicy.CodeOutsideRoots)
	h.wantDenied(read(h, h.ws("sub/../../outside/secret.txt")), pathpolicy.CodeOutsideRoots)
	h.wantDenied(write(h, h.ws("../outside/new.txt"), "x"), pathpolicy.CodeOutsideRoots)
	h.wantDenied(read(h, h.absWS("../../../../../../../etc/passwd")), pathpolicy.CodeOutsideRoots)
	h.wantDenied(h.call(fileops.SearchFiles, args{"pattern": "CANARY", "path": h.ws("..")}), pathpolicy.CodeOutsideRoots)
	r := read(h, h.ws("../outside/secret.txt"))
	if !r.verdict.Retryable || !strings.Contains(r.verdict.Message, h.ws("")[:len(h.ws(""))-1]) {
		t.Errorf("denial should be retryable and name the root: %+v", r.verdict)
	}
	if len(r.verdict.Paths) != 1 || r.verdict.Paths[0].Resolved != h.abs+"/outside/secret.txt" {
		t.Errorf("denial paths = %+v, want the normalised path", r.verdict.Paths)
	}
	h.wantOK(write(h, h.ws("d/../b.txt"), "b"))
	if !h.exists("ws/b.txt") {
		t.Error("ws/d/../b.txt was not written as ws/b.txt")
	}
}

func testSimilarPrefix(t *testing.T, h *harness) {
	h.wantDenied(read(h, h.scratch+"/ws-copy/x.txt"), pathpolicy.CodeOutsideRoots)
	h.wantDenied(read(h, h.abs+"/ws-copy/x.txt"), pathpolicy.CodeOutsideRoots)
	h.wantDenied(write(h, h.scratch+"/ws-copy/y.txt", "x"), pathpolicy.CodeOutsideRoots)
	h.wantDenied(write(h, h.ws("../ws-copy/x.txt"), "x"), pathpolicy.CodeOutsideRoots)
}

func testSymlinkFileOutside(t *testing.T, h *harness) {
	h.sh("ln -s ../outside/secret.txt ws/lnk && ln -s " + h.abs + "/outside/secret.txt ws/abslnk")
	for _, p := range []string{"lnk", "abslnk"} {
		h.wantDenied(read(h, h.ws(p)), pathpolicy.CodeSymlinkEscape)
		h.wantDenied(write(h, h.ws(p), "pwned"), pathpolicy.CodeSymlinkEscape)
		h.wantDenied(h.call(fileops.Patch, args{"path": h.ws(p), "old_string": "OUTSIDE", "new_string": "x"}), pathpolicy.CodeSymlinkEscape)
	}
}

func testSymlinkDirOutside(t *testing.T, h *harness) {
	h.sh("ln -s ../outside ws/out")
	h.wantDenied(read(h, h.ws("out/secret.txt")), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(read(h, h.ws("out/sub/deep.txt")), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(write(h, h.ws("out/new.txt"), "x"), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(write(h, h.ws("out/newdir/new.txt"), "x"), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(h.call(fileops.SearchFiles, args{"pattern": "CANARY", "path": h.ws("out")}), pathpolicy.CodeSymlinkEscape)
	// A search of the root does not follow the link out.
	out := h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "CANARY", "path": h.ws("")}))
	if m := data(t, out)["matches"].([]any); len(m) != 0 {
		t.Errorf("search followed a link out of the root: %v", m)
	}
	out = h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "deep", "path": h.ws(""), "target": "files"}))
	if m := data(t, out)["matches"].([]any); len(m) != 0 {
		t.Errorf("file search followed a link out of the root: %v", m)
	}
}

func testDanglingSymlink(t *testing.T, h *harness) {
	h.sh("ln -s ../outside/nothere ws/dang && ln -s nothere ws/dang2")
	h.wantDenied(read(h, h.ws("dang")), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(write(h, h.ws("dang"), "x"), pathpolicy.CodeSymlinkEscape)
	h.wantFailed(read(h, h.ws("dang2")), pathpolicy.CodeNotFound)
	h.wantDenied(write(h, h.ws("dang2"), "x"), pathpolicy.CodeForbiddenPath)
	if h.exists("ws/nothere") {
		t.Error("a write through a dangling link created its target")
	}
}

func testSymlinkLoop(t *testing.T, h *harness) {
	h.sh("ln -s l2 ws/l1 && ln -s l1 ws/l2 && ln -s self ws/self")
	h.wantDenied(read(h, h.ws("l1")), pathpolicy.CodeInvalidPath)
	h.wantDenied(write(h, h.ws("l1/x.txt"), "x"), pathpolicy.CodeInvalidPath)
	h.wantDenied(read(h, h.ws("self")), pathpolicy.CodeInvalidPath)
}

func testSymlinkedParent(t *testing.T, h *harness) {
	h.sh("mkdir ws/real && ln -s real ws/alias")
	h.wantOK(write(h, h.ws("alias/f.txt"), "via alias\n"))
	if got := h.sh("cat ws/real/f.txt"); got != "via alias\n" {
		t.Errorf("ws/real/f.txt = %q", got)
	}
	out := h.wantOK(read(h, h.ws("alias/f.txt")))
	if out.Content != "1|via alias\n" {
		t.Errorf("read = %q", out.Content)
	}
	r := read(h, h.ws("alias/f.txt"))
	if got := r.verdict.Paths[0].Resolved; got != h.absWS("real/f.txt") {
		t.Errorf("resolved = %q, want %q", got, h.absWS("real/f.txt"))
	}
}

func testSymlinkInsideWrite(t *testing.T, h *harness) {
	h.sh("echo target > ws/target.txt && ln -s target.txt ws/alias.txt")
	out := h.wantOK(read(h, h.ws("alias.txt")))
	if out.Content != "1|target\n" {
		t.Errorf("read through link = %q", out.Content)
	}
	r := write(h, h.ws("alias.txt"), "x")
	h.wantDenied(r, pathpolicy.CodeForbiddenPath)
	if !strings.Contains(r.verdict.Message, "target.txt") {
		t.Errorf("message should name the target to write instead: %q", r.verdict.Message)
	}
}

func testDotEnv(t *testing.T, h *harness) {
	h.sh("mkdir -p ws/sub/deep && echo SECRET_VALUE_1 > ws/.env && echo SECRET_VALUE_2 > ws/sub/deep/.env && " +
		"echo SECRET_VALUE_3 > ws/.env.local && echo ok > ws/x.txt && ln -s .env ws/innocent.txt && mkdir ws/.ssh && echo k > ws/.ssh/id_rsa")
	for _, p := range []string{".env", "sub/deep/.env", ".env.local", "sub/.env/../../x.txt", "innocent.txt", ".ENV", ".ssh/id_rsa", "sub/key.pem", ".git/hooks/pre-commit"} {
		h.wantDenied(read(h, h.ws(p)), pathpolicy.CodeForbiddenPath)
		h.wantDenied(write(h, h.ws(p), "x"), pathpolicy.CodeForbiddenPath)
	}
	out := h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "SECRET_VALUE", "path": h.ws("")}))
	if m := data(t, out)["matches"].([]any); len(m) != 0 {
		t.Errorf("search revealed a denied file: %v", m)
	}
	out = h.wantOK(h.call(fileops.SearchFiles, args{"pattern": ".env", "path": h.ws(""), "target": "files"}))
	if m := data(t, out)["matches"].([]any); len(m) != 0 {
		t.Errorf("file search listed a denied file: %v", m)
	}
	if got := h.sh("cat ws/.env"); got != "SECRET_VALUE_1\n" {
		t.Errorf(".env changed: %q", got)
	}
}

func testProtected(t *testing.T, h *harness) {
	h.sh("mkdir -p ws/.airlock && echo '{}' > ws/.airlock/receipts.jsonl")
	h.wantDenied(read(h, h.ws(".airlock/receipts.jsonl")), pathpolicy.CodeForbiddenPath)
	h.wantDenied(write(h, h.ws(".airlock/receipts.jsonl"), "forged"), pathpolicy.CodeForbiddenPath)
	h.wantDenied(write(h, h.ws(".airlock/./receipts.jsonl"), "forged"), pathpolicy.CodeForbiddenPath)
}

func testWindowsSeparators(t *testing.T, h *harness) {
	win := strings.ReplaceAll(h.ws(`win\a.txt`), "/", `\`)
	h.wantOK(write(h, win, "w\n"))
	if got := h.sh("cat ws/win/a.txt"); got != "w\n" {
		t.Errorf("ws/win/a.txt = %q", got)
	}
	h.wantOK(read(h, win))
	h.wantDenied(read(h, strings.ReplaceAll(h.ws(`..\outside\secret.txt`), "/", `\`)), pathpolicy.CodeOutsideRoots)
	h.wantDenied(read(h, `C:\Windows\win.ini`), pathpolicy.CodeInvalidPath)
}

func testNUL(t *testing.T, h *harness) {
	h.wantDenied(read(h, h.ws("a\x00b")), pathpolicy.CodeInvalidPath)
	h.wantDenied(write(h, h.ws("x.txt\x00../../outside/secret.txt"), "x"), pathpolicy.CodeInvalidPath)
}

func testUnicode(t *testing.T, h *harness) {
	p := h.ws("日本語/файл é ✓.txt")
	h.wantOK(write(h, p, "héllo ✓\n"))
	out := h.wantOK(read(h, p))
	if out.Content != "1|héllo ✓\n" {
		t.Errorf("read = %q", out.Content)
	}
	out = h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "héllo", "path": h.ws("")}))
	if m := data(t, out)["matches"].([]any); len(m) != 1 {
		t.Errorf("search = %v", m)
	}
}

func testMissing(t *testing.T, h *harness) {
	r := read(h, h.ws("nope.txt"))
	h.wantFailed(r, pathpolicy.CodeNotFound)
	if r.verdict.Paths[0].Exists {
		t.Error("policy said a missing file exists")
	}
	h.wantFailed(h.call(fileops.Patch, args{"path": h.ws("nope.txt"), "old_string": "a", "new_string": "b"}), pathpolicy.CodeNotFound)
	h.wantFailed(h.call(fileops.SearchFiles, args{"pattern": "a", "path": h.ws("nodir")}), pathpolicy.CodeNotFound)
}

func testReadWindow(t *testing.T, h *harness) {
	h.sh("i=1; while [ $i -le 10 ]; do echo line$i; i=$((i+1)); done > ws/ten.txt && printf 'a\\nno newline' > ws/nonl.txt")
	out := h.wantOK(h.call(fileops.ReadFile, args{"path": h.ws("ten.txt"), "offset": 3, "limit": 2}))
	if !strings.HasPrefix(out.Content, "3|line3\n4|line4\n") {
		t.Errorf("window = %q", out.Content)
	}
	d := data(t, out)
	if d["first_line"] != float64(3) || d["last_line"] != float64(4) || d["total_lines"] != float64(10) || d["more"] != true {
		t.Errorf("window data = %v", d)
	}
	out = h.wantOK(h.call(fileops.ReadFile, args{"path": h.ws("ten.txt"), "offset": 9}))
	if d := data(t, out); out.Content != "9|line9\n10|line10\n" || d["more"] != false {
		t.Errorf("tail = %q %v", out.Content, d)
	}
	out = h.wantOK(h.call(fileops.ReadFile, args{"path": h.ws("nonl.txt")}))
	if d := data(t, out); out.Content != "1|a\n2|no newline\n" || d["total_lines"] != float64(2) {
		t.Errorf("no final newline = %q %v", out.Content, d)
	}
}

func testOverSizeRead(t *testing.T, h *harness) {
	// 100 KiB in 1 KiB lines: over the 64 KiB read limit.
	h.sh("i=0; while [ $i -lt 100 ]; do head -c 1023 /dev/zero | tr '\\000' x; echo; i=$((i+1)); done > ws/big.txt")
	r := read(h, h.ws("big.txt"))
	h.wantDenied(r, pathpolicy.CodeTooLarge)
	if !strings.Contains(r.verdict.Message, "offset") {
		t.Errorf("too_large message should suggest offset/limit: %q", r.verdict.Message)
	}
	out := h.wantOK(h.call(fileops.ReadFile, args{"path": h.ws("big.txt"), "offset": 1, "limit": 100}))
	d := data(t, out)
	if d["truncated"] != true || !out.Truncated || d["more"] != true || d["last_line"] != float64(64) {
		t.Errorf("windowed over-size read: %v", d)
	}
	if len(out.Content) > maxRead+1024 || !strings.Contains(out.Content, "truncated") {
		t.Errorf("content is %d bytes and must say it was truncated", len(out.Content))
	}
}

func testOverSizeWrite(t *testing.T, h *harness) {
	big := strings.Repeat("é", maxWrite/2+1) // UTF-8 bytes, not characters, count
	h.wantDenied(write(h, h.ws("big.txt"), big), pathpolicy.CodeTooLarge)
	if h.exists("ws/big.txt") {
		t.Error("an over-size write created the file")
	}
	h.sh("echo small > ws/s.txt")
	h.wantDenied(h.call(fileops.Patch, args{"path": h.ws("s.txt"), "old_string": "small", "new_string": big}), pathpolicy.CodeTooLarge)
	// replace_all can grow a file past the limit with a small new_string.
	h.sh("head -c 70000 /dev/zero | tr '\\000' a > ws/grow.txt")
	h.wantFailed(h.call(fileops.Patch, args{"path": h.ws("grow.txt"), "old_string": "a", "new_string": "bb", "replace_all": true}), pathpolicy.CodeTooLarge)
}

func testWriteMode(t *testing.T, h *harness) {
	h.wantOK(write(h, h.ws("new/deeper/f.txt"), "x\n"))
	h.sh("echo old > ws/m.sh && chmod 750 ws/m.sh")
	out := h.wantOK(write(h, h.ws("m.sh"), "#!/bin/sh\necho new\n"))
	if d := data(t, out); d["action"] != "overwritten" {
		t.Errorf("data = %v", d)
	}
	if mode := strings.Fields(h.sh("ls -ln ws/m.sh"))[0]; mode != "-rwxr-x---" {
		t.Errorf("mode after write = %s, want -rwxr-x---", mode)
	}
	if left := h.sh("ls -a ws | grep airlock || true"); left != "" {
		t.Errorf("temporary files left: %q", left)
	}
	h.wantFailed(write(h, h.ws("new"), "x"), fileops.CodeNotRegular)
	h.wantFailed(write(h, h.ws("new/deeper/f.txt/under"), "x"), fileops.CodeNotDirectory)
}

func testAtomicWrite(t *testing.T, h *harness) {
	a := strings.Repeat("A", 48<<10) + "\n"
	b := strings.Repeat("B", 40<<10) + "\n"
	h.wantOK(write(h, h.ws("atomic.txt"), a))
	file := h.absWS("atomic.txt")
	done := make(chan struct{})
	var wg sync.WaitGroup
	var reads int
	var bad []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := h.env.Exec(context.Background(), backend.Request{Argv: []string{"cat", file}})
			if err != nil {
				bad = append(bad, err.Error())
				return
			}
			reads++
			if got := string(res.Stdout); got != a && got != b {
				bad = append(bad, fmt.Sprintf("exit %d, %d bytes", res.ExitCode, len(got)))
			}
		}
	}()
	for i := 0; i < 40; i++ {
		content := a
		if i%2 == 0 {
			content = b
		}
		h.wantOK(write(h, h.ws("atomic.txt"), content))
	}
	close(done)
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("a reader saw %d partial files in %d reads: %v", len(bad), reads, bad[:min(5, len(bad))])
	}
	t.Logf("%d reads during 40 writes", reads)
}

func testPatch(t *testing.T, h *harness) {
	h.sh("printf 'alpha\\nbeta\\ngamma\\nbeta\\n' > ws/p.txt && printf 'func main() {\\n\\treturn\\n}\\n' > ws/m.go")
	patch := func(p, old, new string, all bool) result {
		return h.call(fileops.Patch, args{"path": h.ws(p), "old_string": old, "new_string": new, "replace_all": all})
	}
	out := h.wantFailed(patch("p.txt", "delta", "x", false), fileops.CodeNoMatch)
	if !out.Retryable {
		t.Error("no_match should be retryable")
	}
	out = h.wantFailed(patch("m.go", "    return", "x", false), fileops.CodeNoMatch)
	if c := data(t, out)["candidate_lines"]; fmt.Sprint(c) != "[2]" {
		t.Errorf("no_match candidates = %v (%s)", c, out.ErrorMessage)
	}
	out = h.wantFailed(patch("p.txt", "beta", "x", false), fileops.CodeMultipleMatches)
	if c := data(t, out)["candidate_lines"]; fmt.Sprint(c) != "[2 4]" || !strings.Contains(out.ErrorMessage, "2, 4") {
		t.Errorf("multiple_matches candidates = %v (%s)", c, out.ErrorMessage)
	}
	if got := h.sh("cat ws/p.txt"); got != "alpha\nbeta\ngamma\nbeta\n" {
		t.Errorf("a failed patch changed the file: %q", got)
	}
	out = h.wantOK(patch("p.txt", "gamma", "GAMMA", false))
	d := data(t, out)
	if d["replacements"] != float64(1) || !strings.Contains(d["diff"].(string), "-gamma\n+GAMMA\n") || !strings.Contains(d["diff"].(string), "@@ -1,4 +1,4 @@") {
		t.Errorf("patch data = %v", d)
	}
	h.wantOK(patch("p.txt", "beta\n", "b\n", true))
	if got := h.sh("cat ws/p.txt"); got != "alpha\nb\nGAMMA\nb\n" {
		t.Errorf("after replace_all: %q", got)
	}
}

func testBinary(t *testing.T, h *harness) {
	h.sh("printf 'ELF\\000\\001\\002binary\\n' > ws/bin.dat")
	out := h.wantOK(read(h, h.ws("bin.dat")))
	if d := data(t, out); d["binary"] != true || strings.ContainsRune(out.Content, 0) || !strings.Contains(out.Content, "binary") {
		t.Errorf("binary read = %q %v", out.Content, d)
	}
}

func testSearchFlags(t *testing.T, h *harness) {
	// Each file is also a shell script that leaves a marker if anything runs it.
	h.sh("mkdir ws/s && cd ws/s && printf 'touch ../PWNED # --pre=/bin/sh\\n' > a.txt && " +
		"printf 'touch ../PWNED2\\n-e\\n' > b.txt && printf 'x\\n--\\n' > c.txt && printf 'plain\\n' > d.txt")
	for _, tc := range []struct{ pattern, want string }{
		{"--pre=/bin/sh", "a.txt:1"},
		{"-e", "b.txt:2"},
		{"--files", ""},
		{"--", "a.txt:1 c.txt:2"},
	} {
		out := h.wantOK(h.call(fileops.SearchFiles, args{"pattern": tc.pattern, "path": h.ws("s")}))
		var got []string
		for _, m := range data(t, out)["matches"].([]any) {
			m := m.(map[string]any)
			got = append(got, strings.TrimPrefix(m["path"].(string), h.ws("s/"))+":"+fmt.Sprint(m["line"]))
		}
		if strings.Join(sortStrings(got), " ") != tc.want {
			t.Errorf("search %q = %v, want %s", tc.pattern, got, tc.want)
		}
	}
	out := h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "-delete", "path": h.ws("s"), "target": "files"}))
	if m := data(t, out)["matches"].([]any); len(m) != 0 {
		t.Errorf("file search -delete = %v", m)
	}
	out = h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "plain", "path": h.ws("s"), "glob": "--pre=/bin/sh"}))
	if m := data(t, out)["matches"].([]any); len(m) != 0 {
		t.Errorf("glob --pre = %v", m)
	}
	if h.exists("ws/PWNED") || h.exists("ws/PWNED2") || !h.exists("ws/s/d.txt") {
		t.Fatal("a search pattern was executed")
	}
	out = h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "t", "path": h.ws("s"), "max_results": 1}))
	if d := data(t, out); len(d["matches"].([]any)) != 1 || d["truncated"] != true {
		t.Errorf("max_results 1: %v", d)
	}
}

func testSearchFiles(t *testing.T, h *harness) {
	h.sh("mkdir -p ws/src/pkg && touch ws/src/pkg/a_test.go ws/src/pkg/a.go ws/src/b_test.go && mkdir -p ws/.git && touch ws/.git/x_test.go")
	out := h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "*_test.go", "path": h.ws(""), "target": "files"}))
	var got []string
	for _, m := range data(t, out)["matches"].([]any) {
		got = append(got, strings.TrimPrefix(m.(map[string]any)["path"].(string), h.ws("")))
	}
	if strings.Join(sortStrings(got), " ") != "src/b_test.go src/pkg/a_test.go" {
		t.Errorf("file search = %v", got)
	}
	out = h.wantOK(h.call(fileops.SearchFiles, args{"pattern": "a", "path": h.ws("src"), "target": "files", "glob": "*.go"}))
	if m := data(t, out)["matches"].([]any); len(m) != 2 {
		t.Errorf("substring file search = %v", m)
	}
}

// testSwapAfterCheck swaps a checked path for a link to outside between policy and handler:
// the handler's own check must refuse.
func testSwapAfterCheck(t *testing.T, h *harness) {
	h.sh("echo victim > ws/victim.txt && mkdir ws/d && echo inner > ws/d/f.txt")
	check := func(name string, a args) (pipeline.Verdict, result) {
		r := h.call(name, a) // runs policy and handler once, on the honest path
		h.wantOK(r)
		return r.verdict, r
	}
	rerun := func(name string, a args, v pipeline.Verdict) {
		t.Helper()
		tl, _ := h.reg.Lookup(name)
		raw := mustJSON(t, a)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out := h.handle(ctx, tl, raw, v.Paths)
		if out.Status != "failed" {
			t.Errorf("%s after swap: status %q, content %q", name, out.Status, out.Content)
		}
	}
	readArgs := args{"path": h.ws("victim.txt")}
	vRead, _ := check(fileops.ReadFile, readArgs)
	writeArgs := args{"path": h.ws("victim.txt"), "content": "victim\n"}
	vWrite, _ := check(fileops.WriteFile, writeArgs)
	dirArgs := args{"path": h.ws("d/f.txt"), "content": "inner\n"}
	vDir, _ := check(fileops.WriteFile, dirArgs)
	h.sh("rm ws/victim.txt && ln -s ../outside/secret.txt ws/victim.txt && mv ws/d ws/d.real && ln -s ../outside ws/d")
	rerun(fileops.ReadFile, readArgs, vRead)
	rerun(fileops.WriteFile, writeArgs, vWrite)
	rerun(fileops.WriteFile, dirArgs, vDir)
	rerun(fileops.Patch, args{"path": h.ws("victim.txt"), "old_string": "OUTSIDE", "new_string": "x"}, vWrite)
	if h.exists("outside/f.txt") {
		t.Error("a write through a swapped directory landed outside")
	}
}

// testLinkedRoot configures roots that are, or pass through, symbolic links: planted after
// the policy was made, as a model could with ln -s. Such a root admits nothing, neither
// beneath its name nor where it leads.
func testLinkedRoot(t *testing.T, h *harness) {
	ws := h.scratch + "/ws"
	h.sh("mkdir ws/real && ln -s real ws/alias && ln -s ../outside ws/out")
	for _, root := range []string{ws + "/out", h.abs + "/ws/out"} {
		h.usePolicy([]string{ws}, []string{root})
		h.wantDenied(write(h, h.ws("out/new.txt"), "x"), pathpolicy.CodeSymlinkEscape)
		h.wantDenied(write(h, h.ws("out/newdir/new.txt"), "x"), pathpolicy.CodeSymlinkEscape)
		h.wantDenied(write(h, h.abs+"/outside/new.txt", "x"), pathpolicy.CodeOutsideRoots)
		h.wantDenied(h.call(fileops.Patch, args{"path": h.abs + "/outside/secret.txt", "old_string": "OUTSIDE", "new_string": "x"}), pathpolicy.CodeOutsideRoots)
		h.wantDenied(read(h, h.ws("out/secret.txt")), pathpolicy.CodeSymlinkEscape)
	}
	// A read root through the link, a write root that is a link inside the workspace.
	h.usePolicy([]string{ws + "/out/sub"}, []string{ws + "/alias"})
	h.wantDenied(read(h, h.ws("out/sub/deep.txt")), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(h.call(fileops.SearchFiles, args{"pattern": "CANARY", "path": h.ws("out/sub")}), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(read(h, h.abs+"/outside/sub/deep.txt"), pathpolicy.CodeOutsideRoots)
	h.wantDenied(write(h, h.ws("alias/x.txt"), "x"), pathpolicy.CodeSymlinkEscape)
	h.wantDenied(write(h, h.ws("real/x.txt"), "x"), pathpolicy.CodeOutsideRoots)
	// A real root, and one that does not exist yet, are roots.
	h.usePolicy([]string{ws}, []string{ws + "/real", ws + "/build"})
	h.wantOK(write(h, h.ws("real/x.txt"), "x"))
	h.wantOK(write(h, h.ws("build/x.txt"), "x"))
	if !h.exists("ws/real/x.txt") || !h.exists("ws/build/x.txt") {
		t.Error("writes under real roots did not land")
	}
}

// testDotDotAfterMissing resolves links whose target climbs with ".." out of a directory
// that does not exist, or out of a file: the kernel refuses such a path, so the policy must
// not resolve it to the directory beside (here a link out of the root).
func testDotDotAfterMissing(t *testing.T, h *harness) {
	h.sh("mkdir shared && ln -s ../outside shared/evil && ln -s nonexist/../evil shared/l && " +
		"ln -s ../outside ws/evil && ln -s nonexist/../evil ws/l && ln -s a/b/../../evil ws/l2 && " +
		"echo f > ws/file && ln -s file/../evil ws/f")
	roots := []string{h.scratch + "/ws", h.abs + "/shared"}
	h.usePolicy(roots, roots)
	h.wantDenied(read(h, h.abs+"/shared/l/secret.txt"), pathpolicy.CodeInvalidPath)
	h.wantDenied(write(h, h.abs+"/shared/l/new/x.txt", "x"), pathpolicy.CodeInvalidPath)
	h.wantDenied(h.call(fileops.SearchFiles, args{"pattern": "CANARY", "path": h.abs + "/shared/l"}), pathpolicy.CodeInvalidPath)
	for _, p := range []string{"l/secret.txt", "l2/secret.txt", "f/secret.txt", "l/sub/deep.txt"} {
		h.wantDenied(read(h, h.ws(p)), pathpolicy.CodeInvalidPath)
		h.wantDenied(write(h, h.ws(p), "x"), pathpolicy.CodeInvalidPath)
	}
	if h.exists("outside/new") || h.exists("ws/nonexist") || h.exists("shared/nonexist") {
		t.Error("a write through a link created directories")
	}
}

// testLongPaths gives paths longer than any kernel takes, which are invalid (and not an
// error of the policy), and a long but legal one, which works.
func testLongPaths(t *testing.T, h *harness) {
	h.wantDenied(read(h, h.ws(strings.Repeat("a/", 70_000)+"x")), pathpolicy.CodeInvalidPath)
	h.wantDenied(write(h, h.ws(strings.Repeat("a/", 2100)+"x"), "x"), pathpolicy.CodeInvalidPath)
	h.wantDenied(write(h, h.ws(strings.Repeat("n", 256)), "x"), pathpolicy.CodeInvalidPath)
	h.wantOK(write(h, h.ws(strings.Repeat("n", 255)), "x\n"))
	deep := h.ws(strings.Repeat("d/", 1000) + "f.txt")
	h.wantOK(write(h, deep, "deep\n"))
	if out := h.wantOK(read(h, deep)); out.Content != "1|deep\n" {
		t.Errorf("deep read = %q", out.Content)
	}
}

// testGitConfig checks that git's config and submodule directory are denied by default:
// a core.fsmonitor line there runs a command on the next git status.
func testGitConfig(t *testing.T, h *harness) {
	h.sh("mkdir -p ws/.git/modules/lib ws/vendor/x/.git && printf '[core]\\n' > ws/.git/config && " +
		"printf '[core]\\n' > ws/.git/modules/lib/config && ln -s .git/config ws/gitconfig")
	for _, p := range []string{".git/config", ".GIT/CONFIG", ".git/modules/lib/config", ".git/modules/lib/hooks/post-checkout", "vendor/x/.git/config", "gitconfig"} {
		h.wantDenied(read(h, h.ws(p)), pathpolicy.CodeForbiddenPath)
		h.wantDenied(write(h, h.ws(p), "[core]\n\tfsmonitor = touch PWNED\n"), pathpolicy.CodeForbiddenPath)
	}
	h.wantDenied(h.call(fileops.Patch, args{"path": h.ws(".git/config"), "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = x"}), pathpolicy.CodeForbiddenPath)
	if got := h.sh("cat ws/.git/config"); got != "[core]\n" {
		t.Errorf(".git/config changed: %q", got)
	}
	h.wantOK(write(h, h.ws(".git/HEAD"), "ref: refs/heads/main\n"))
}

// testPreview: what a person approves is what the handler then does, on every road. A
// patch's preview is the diff the model is shown after it, every replacement included; a
// write over a file too large to compare, or a binary one, says so instead of passing the
// new content off as an addition; a patch that cannot apply says how it will fail.
func testPreview(t *testing.T, h *harness) {
	h.sh("printf 'x = 1\\na\\nb\\nc\\nd\\ne\\nf\\ng\\nx = 1\\n' > ws/cfg.txt && printf 'a\\0b' > ws/bin.dat")
	pa := args{"path": h.ws("cfg.txt"), "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}
	shown := h.preview(fileops.Patch, pa)
	diff := data(t, h.wantOK(h.call(fileops.Patch, pa)))["diff"].(string)
	if !strings.HasSuffix(shown, "\n"+diff) || strings.Count(shown, "\n-x = 1") != 2 || !strings.Contains(shown, "2 replacement(s)") {
		t.Errorf("patch preview %q is not the diff the model got %q", shown, diff)
	}
	for _, c := range []struct {
		args args
		want string
	}{
		{args{"path": h.ws("cfg.txt"), "old_string": "nowhere", "new_string": "y"}, "no_match"},
		{args{"path": h.ws("cfg.txt"), "old_string": "x = 2", "new_string": "y"}, "multiple_matches"},
	} {
		if got := h.preview(fileops.Patch, c.args); !strings.Contains(got, c.want) {
			t.Errorf("preview of %v = %q, want %s", c.args, got, c.want)
		}
	}
	if got := h.preview(fileops.WriteFile, args{"path": h.ws("bin.dat"), "content": "text\n"}); !strings.Contains(got, "binary") {
		t.Errorf("binary write preview = %q", got)
	}
	h.sh(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' 'y' > ws/huge.txt", maxRead+10))
	if got := h.preview(fileops.WriteFile, args{"path": h.ws("huge.txt"), "content": "small\n"}); !strings.Contains(got, "larger than the read limit") {
		t.Errorf("over-size write preview = %.200q", got)
	}
	if got := h.preview(fileops.WriteFile, args{"path": h.ws("new.txt"), "content": "fresh\n"}); !strings.Contains(got, "creates") || !strings.Contains(got, "+fresh") {
		t.Errorf("new file preview = %q", got)
	}
}
