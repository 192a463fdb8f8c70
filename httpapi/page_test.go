package httpapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airlock-dev/airlock/pipeline"
)

// browser starts headless Chromium (Debian's chromium) for the test. Without it the test
// skips, unless AIRLOCK_REQUIRE_CHROMIUM=1 or AIRLOCK_REQUIRE_MCP_CLIENTS=1 (CI) says a
// missing browser is a failure.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_CHROMIUM") == "1" || os.Getenv("AIRLOCK_REQUIRE_MCP_CLIENTS") == "1" {
			t.Fatalf("chromium is required (AIRLOCK_REQUIRE_CHROMIUM): %v; apt-get install -y chromium", err)
		}
		t.Skipf("no chromium: %v (apt-get install -y chromium)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Headless,
		chromedp.WindowSize(1100, 1400), chromedp.UserDataDir(t.TempDir()),
		// Its singleton socket directory (org.chromium.Chromium.*) too, which a killed
		// browser would leave in /tmp.
		chromedp.Env("TMPDIR="+t.TempDir()))
	if os.Geteuid() == 0 {
		// Chromium refuses to start its sandbox as root; the test runs as root in CI's
		// container, and the page it loads is our own, served from loopback.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// artifactDir is where the test's screenshots go: $AIRLOCK_TEST_ARTIFACTS/<test> when set,
// else the test's artifact directory (kept with go test -artifacts).
func artifactDir(t *testing.T) string {
	if d := os.Getenv("AIRLOCK_TEST_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, t.Name())
		must(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	return t.ArtifactDir()
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100 makes a PNG; below it is a JPEG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	must(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
	return path
}

// The page end to end in a real browser: a call waits for a person, the person sees it with
// its reasons on the page, approves it, and the call then runs with a receipt naming who
// approved; a second call is denied with a message, which the model reads.
func TestApprovalsPageInChromium(t *testing.T) {
	ctx := browser(t)
	f := newFixture(t, askConfig)
	si := f.session(t, aliceToken)
	dir := artifactDir(t)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-approved")
	card := "#approval-" + id

	err := chromedp.Do(ctx,
		chromedp.Navigate(f.url+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), aliceToken+"\n"),
		chromedp.WaitVisible(chromedp.CSS(card)),
	)
	if err != nil {
		t.Fatalf("page: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card)))
	if err != nil {
		t.Fatalf("page: %v", err)
	}
	for _, want := range []string{"touch marker-approved", "writes_files", "risk: write", si.ID, "local", f.ws, "expires in"} {
		if !strings.Contains(text, want) {
			t.Errorf("the approval on the page lacks %q:\n%s", want, text)
		}
	}
	shot := screenshot(t, ctx, dir, "1-pending.png")
	if os.Getenv("AIRLOCK_UPDATE_SCREENSHOT") == "1" {
		data, err := os.ReadFile(shot)
		must(t, err)
		must(t, os.WriteFile(filepath.Join("..", "docs", "img", "approvals-page.png"), data, 0o644))
	}
	// Approve by keyboard: focus the button and press Enter.
	if err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS(card+" .approve-once")),
		chromedp.KeyEvent("\r"),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
	); err != nil {
		t.Fatalf("approve: %v", err)
	}
	res := f.run(t, si.ID, "touch marker-approved")
	if res.Status != pipeline.StatusOK || res.Receipt == nil || !strings.Contains(res.Receipt.DecidedBy, "person:http:alice") {
		t.Fatalf("the approved call: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "marker-approved")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}
	// Its receipt shows up below, live.
	if err := chromedp.Do(ctx, waitText("#receipts", "person:http:alice")); err != nil {
		t.Fatalf("the receipt did not appear on the page: %v", err)
	}
	screenshot(t, ctx, dir, "2-approved.png")

	// Deny with a message. The command carries markup, which must show as text.
	cmd := "touch 'marker-<b>denied</b>'"
	id = f.pendingCall(t, aliceToken, si.ID, cmd)
	card = "#approval-" + id
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(card)), waitText(card, "<b>denied</b>")); err != nil {
		t.Fatalf("second approval: %v", err)
	}
	bold, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#approvals b").length`))
	if err != nil {
		t.Fatalf("second approval: %v", err)
	}
	if bold != 0 {
		t.Fatalf("the agent's markup became %d element(s) on the page", bold)
	}
	screenshot(t, ctx, dir, "3-deny.png")
	// Readable on a phone: one column, the buttons within the screen.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatalf("phone viewport: %v", err)
	}
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > 390`))
	if err != nil || wide {
		t.Errorf("the page is wider than a phone's screen (%v)", err)
	}
	screenshot(t, ctx, dir, "4-phone.png")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 1400)); err != nil {
		t.Fatalf("viewport: %v", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(card+" .message"), "write it under scratch/ instead"),
		chromedp.Click(chromedp.CSS(card+" .deny")),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
	); err != nil {
		t.Fatalf("deny: %v", err)
	}
	res = f.run(t, si.ID, cmd)
	if res.Status == pipeline.StatusOK || !strings.Contains(res.Content, "write it under scratch/ instead") {
		t.Fatalf("the denied call's result lacks the message: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "marker-<b>denied</b>")); err == nil {
		t.Fatal("the denied command ran")
	}
}

// waitText waits until the element's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tgt *chromedp.Target) error {
		for {
			text, err := chromedp.Text(chromedp.CSS(sel))(ctx, tgt)
			if err != nil {
				return err
			}
			if strings.Contains(text, want) {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// run sends one terminal command as alice and returns its result.
func (f *fixture) run(t *testing.T, sessionID, command string) pipeline.Result {
	t.Helper()
	var res pipeline.Result
	f.do(t, "POST", "/v1/sessions/"+sessionID+"/calls", aliceToken, callBody(command)).decode(t, &res)
	return res
}

// The page is served without a token, from embedded files only, under a policy that lets
// only its own script run; its script never turns text into markup.
func TestPageAssetsAreSelfContained(t *testing.T) {
	f := newFixture(t, "")
	cases := []struct{ path, ctype string }{
		{"/", "text/html; charset=utf-8"},
		{"/page/app.js", "text/javascript; charset=utf-8"},
		{"/page/style.css", "text/css; charset=utf-8"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			a := f.do(t, "GET", tc.path, "", "")
			if a.status != 200 || a.header.Get("Content-Type") != tc.ctype {
				t.Fatalf("%d %q", a.status, a.header.Get("Content-Type"))
			}
			csp := a.header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %q", csp, want)
				}
			}
			body := string(a.body)
			for _, bad := range []string{"http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("} {
				if strings.Contains(body, bad) {
					t.Errorf("%s contains %q", tc.path, bad)
				}
			}
		})
	}
	if a := f.do(t, "GET", "/page/missing.js", "", ""); a.status != 401 {
		t.Fatalf("an unknown page file is served without a token: %d", a.status)
	}
}
