package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/urlguard"
)

// The urlcheck command shows what the URL guard decides for a URL, without fetching it.
// --jsonl serves scripts and tests that judge many URLs; tests outside the repository rely on
// its output (url, allowed, reason), so fields are only ever added.
func init() {
	register(command{
		name:    "urlcheck",
		summary: "judge whether a URL may be fetched, without fetching it",
		run:     runURLCheck,
	})
}

// urlVerdict is one answer of urlcheck.
type urlVerdict struct {
	URL          string   `json:"url"`
	Allowed      bool     `json:"allowed"`
	Reason       string   `json:"reason"`
	Detail       string   `json:"detail,omitempty"`
	Host         string   `json:"host,omitempty"`
	Port         int      `json:"port,omitempty"`
	CanonicalURL string   `json:"canonical_url,omitempty"`
	Addrs        []string `json:"addrs,omitempty"`
	Line         int      `json:"line,omitempty"`
}

// invalidInput is the reason for a --jsonl line that is not a JSON string.
const invalidInput = "invalid_input"

func runURLCheck(args []string, s stdio) int {
	fs := newFlagSet("urlcheck", "", s)
	asJSONL := fs.Bool("jsonl", false, "read one JSON-encoded URL string per input line and print one JSON object per line")
	configFile := fs.String("config", "", "config file whose [network] section applies (default: ./airlock.toml, else defaults)")
	timeout := fs.Duration("timeout", 5*time.Second, "time allowed to resolve each name")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: airlock urlcheck [--config FILE] URL...")
		fmt.Fprintln(fs.Output(), "       airlock urlcheck --jsonl [--config FILE] < urls.jsonl")
		fmt.Fprintln(fs.Output(), "\nSays whether the URL guard lets a URL through, and why not (a stable reason code),")
		fmt.Fprintln(fs.Output(), "without fetching it. Names are resolved; a name that does not resolve is refused.")
		fmt.Fprintln(fs.Output(), "[network] deny_domains, allow_domains (mode = \"allowlist\") and allow_private apply;")
		fmt.Fprintln(fs.Output(), "mode = \"none\" is judged as \"open\", so the answer says what the address itself allows.")
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *asJSONL == (fs.NArg() > 0) {
		fs.Usage()
		return 2
	}
	cfg, err := configs.Load(*configFile)
	if err != nil {
		return fail(s, err)
	}
	netCfg := cfg.Network
	if netCfg.Mode == urlguard.ModeNone {
		netCfg.Mode = urlguard.ModeOpen
	}
	g, err := urlguard.New(netCfg)
	if err != nil {
		return fail(s, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	check := func(u string) urlVerdict {
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		return verdictOf(u, g.CheckURL(cctx, u))
	}
	if *asJSONL {
		if err := urlCheckLines(s.in, s.out, check); err != nil {
			fmt.Fprintf(s.err, "airlock urlcheck: %v\n", err)
			return 1
		}
		return 0
	}
	for _, u := range fs.Args() {
		v := check(u)
		verdict := "refused"
		if v.Allowed {
			verdict = "allowed"
		}
		fmt.Fprintf(s.out, "%s %s: %s", verdict, u, v.Reason)
		if v.Detail != "" {
			fmt.Fprintf(s.out, " (%s)", v.Detail)
		}
		fmt.Fprintln(s.out)
	}
	return 0
}

func verdictOf(u string, d urlguard.Decision) urlVerdict {
	v := urlVerdict{URL: u, Allowed: d.Allowed, Reason: string(d.Reason), Detail: d.Detail,
		Host: d.Target.Host, Port: d.Target.Port}
	if d.Target.Host != "" {
		v.CanonicalURL = d.Target.URL()
	}
	for _, a := range d.Addrs {
		v.Addrs = append(v.Addrs, a.String())
	}
	return v
}

// maxURLLine is the longest input line urlcheck reads whole; a longer one is answered
// invalid_input and skipped, so one bad line never stops the answers to the rest.
const maxURLLine = 1 << 20

// urlCheckLines answers each input line with one output line, in order, malformed lines
// included.
func urlCheckLines(in io.Reader, out io.Writer, check func(string) urlVerdict) error {
	r := bufio.NewReaderSize(in, 64<<10)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for n := 1; ; n++ {
		line, tooLong, err := readLine(r)
		if err != nil && len(line) == 0 && !tooLong {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("read urls: %w", err)
		}
		var u string
		var v urlVerdict
		switch {
		case tooLong:
			v = urlVerdict{URL: string(line[:min(len(line), 256)]), Reason: invalidInput, Detail: fmt.Sprintf("line longer than %d bytes", maxURLLine), Line: n}
		default:
			if jerr := json.Unmarshal(line, &u); jerr != nil {
				v = urlVerdict{URL: string(line), Reason: invalidInput, Detail: fmt.Sprintf("line is not a JSON string: %v", jerr), Line: n}
			} else {
				v = check(u)
			}
		}
		if werr := enc.Encode(v); werr != nil {
			return fmt.Errorf("write verdict: %w", werr)
		}
		if err == io.EOF {
			return nil
		}
	}
}

// readLine returns the next line without its end (\n or \r\n). A line over maxURLLine is
// read to its end and dropped, with tooLong set and its first bytes returned.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxURLLine {
			tooLong = true
			if len(buf) < 256 {
				buf = append(buf, chunk[:min(len(chunk), 256)]...)
			}
		} else {
			buf = append(buf, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil || len(buf) > 0 {
			buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
		}
		return buf, tooLong, err
	}
}
