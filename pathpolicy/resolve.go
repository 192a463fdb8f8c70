package pathpolicy

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

// maxHops bounds how many symbolic links one resolution follows, as the kernel's own
// limit does; more means a loop.
const maxHops = 40

// resolveScript resolves each absolute path given as an argument, inside the environment,
// with POSIX sh and two utilities busybox has (readlink without flags, ls -ldn). For each path
// it prints eight NUL-terminated fields: status (ok, loop, dotdot), resolved path, exists
// (0/1), kind (f, d, o, -), last component is a link (0/1), a link was followed (0/1), hard
// link count, size. It walks the path one component at a time from the root, so that a link in any
// component is followed, relative targets are taken from the link's directory, and a path
// that does not exist yet resolves through its deepest existing parent. Below a missing
// component nothing exists, so nothing there can be a link; a ".." there (from a link's
// target: the path itself is clean) would climb back where links are, and the kernel refuses
// it, as it refuses ".." after a file, so the walk stops with status dotdot.
const resolveScript = `set -f
walk() {
	todo=${1#/}; r=; hops=0; via=0; missing=0; st=ok
	while [ -n "$todo" ]; do
		c=${todo%%/*}
		case $todo in */*) todo=${todo#*/} ;; *) todo= ;; esac
		case $c in
		'' | .) continue ;;
		..)
			if [ $missing = 1 ] || [ ! -d "${r:-/}" ]; then st=dotdot; break; fi
			r=${r%/*}; continue ;;
		esac
		if [ $missing = 1 ]; then r=$r/$c; continue; fi
		p=$r/$c
		if [ -L "$p" ]; then
			hops=$((hops + 1)); via=1
			if [ $hops -gt ` + "MAXHOPS" + ` ]; then st=loop; break; fi
			t=$(readlink "$p" && echo .) || { st=loop; break; }
			t=${t%??}
			[ -n "$t" ] || { st=loop; break; }
			case $t in /*) r= ;; esac
			t=${t#/}
			if [ -n "$todo" ]; then todo=$t/$todo; else todo=$t; fi
		elif [ -e "$p" ]; then r=$p
		else missing=1; r=$p
		fi
	done
	R=${r:-/}
}
info() { set -- $(ls -ldn "$1" 2>/dev/null); printf '%s\0%s\0' "${2:-0}" "${5:-0}"; }
for a in "$@"; do
	walk "$a"
	link=0; [ -L "$a" ] && link=1
	if [ $st = ok ] && [ $missing = 0 ] && [ -e "$R" ]; then
		k=o; [ -d "$R" ] && k=d; [ -f "$R" ] && k=f
		printf '%s\0%s\0%s\0%s\0%s\0%s\0' "$st" "$R" 1 $k $link $via
		if [ $k = f ]; then info "$R"; else printf '%s\0%s\0' 0 0; fi
	else
		printf '%s\0%s\0%s\0%s\0%s\0%s\0%s\0%s\0' "$st" "$R" 0 - $link $via 0 0
	fi
done
`

var resolveCmd = strings.Replace(resolveScript, "MAXHOPS", strconv.Itoa(maxHops), 1)

// resolved is what the environment said about one path.
type resolved struct {
	Real    string
	Exists  bool
	Kind    Kind
	Link    bool
	ViaLink bool
	Loop    bool
	DotDot  bool
	Links   int
	Size    int64
}

// resolve follows every existing symlink of each absolute, cleaned path inside env, with one
// command. Paths must come from [Normalize]. A path named more than once (a Check names the
// workspace itself, then each root, which by default is the workspace again) is asked for
// once, in the same message, and its one answer given to each place that named it.
func resolve(ctx context.Context, env backend.Environment, paths []string) ([]resolved, error) {
	uniq, at := distinct(paths)
	if len(uniq) == len(paths) {
		return resolveDistinct(ctx, env, paths)
	}
	rs, err := resolveDistinct(ctx, env, uniq)
	if err != nil {
		return nil, err
	}
	out := make([]resolved, len(paths))
	for i, j := range at {
		out[i] = rs[j]
	}
	return out, nil
}

// distinct returns the paths without repeats, in the order first named, and for each of
// paths its index there. A Check names a handful (a scan is cheaper than a map); a
// prepared batch, thousands.
func distinct(paths []string) (uniq []string, at []int) {
	at = make([]int, len(paths))
	uniq = make([]string, 0, len(paths))
	var index map[string]int
	if len(paths) > 16 {
		index = make(map[string]int, len(paths))
	}
next:
	for i, p := range paths {
		if index != nil {
			if j, ok := index[p]; ok {
				at[i] = j
				continue
			}
			index[p] = len(uniq)
		} else {
			for j, u := range uniq {
				if u == p {
					at[i] = j
					continue next
				}
			}
		}
		at[i] = len(uniq)
		uniq = append(uniq, p)
	}
	return uniq, at
}

func resolveDistinct(ctx context.Context, env backend.Environment, paths []string) ([]resolved, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if pr, ok := env.(backend.PathResolver); ok {
		return resolveNative(ctx, pr, paths)
	}
	argv := append([]string{"sh", "-c", resolveCmd, "airlock-resolve"}, paths...)
	res, err := env.Exec(ctx, backend.Request{Argv: argv, Timeout: 30 * time.Second, MaxOutputBytes: 4 << 20})
	if err != nil {
		return nil, fmt.Errorf("resolve paths: %w", err)
	}
	if res.ExitCode != 0 || res.Truncated {
		return nil, fmt.Errorf("resolve paths: exit %d, truncated %v: %s", res.ExitCode, res.Truncated, bytes.TrimSpace(res.Stderr))
	}
	return parseResolved(res.Stdout, len(paths))
}

func parseResolved(out []byte, n int) ([]resolved, error) {
	fields := strings.Split(string(out), "\x00")
	if len(fields) != n*8+1 || fields[len(fields)-1] != "" {
		return nil, fmt.Errorf("resolve paths: got %d fields for %d paths", len(fields)-1, n)
	}
	rs := make([]resolved, n)
	for i := range rs {
		f := fields[i*8 : i*8+8]
		links, err1 := strconv.Atoi(f[6])
		size, err2 := strconv.ParseInt(f[7], 10, 64)
		if err1 != nil || err2 != nil || (f[0] != "ok" && f[0] != "loop" && f[0] != "dotdot") {
			return nil, fmt.Errorf("resolve paths: malformed record %q", f)
		}
		k := KindNone
		switch f[3] {
		case "f":
			k = KindFile
		case "d":
			k = KindDir
		case "o":
			k = KindOther
		}
		rs[i] = resolved{
			Real: path.Clean(f[1]), Exists: f[2] == "1", Kind: k, Link: f[4] == "1",
			ViaLink: f[5] == "1", Loop: f[0] == "loop", DotDot: f[0] == "dotdot", Links: links, Size: size,
		}
	}
	return rs, nil
}

// resolveNative asks the environment's helper, which resolves natively where commands run.
func resolveNative(ctx context.Context, pr backend.PathResolver, paths []string) ([]resolved, error) {
	got, err := pr.ResolvePaths(ctx, paths)
	if err != nil {
		return nil, fmt.Errorf("resolve paths: %w", err)
	}
	rs := make([]resolved, len(got))
	for i, g := range got {
		k := KindNone
		switch g.Kind {
		case "f":
			k = KindFile
		case "d":
			k = KindDir
		case "o":
			k = KindOther
		}
		rs[i] = resolved{Real: path.Clean(g.Real), Exists: g.Exists, Kind: k, Link: g.Link, ViaLink: g.ViaLink,
			Loop: g.Loop, DotDot: g.DotDot, Links: g.Links, Size: g.Size}
	}
	return rs, nil
}
