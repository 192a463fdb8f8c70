package fileops

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/session"
)

// Exit codes of the shell operations, mapped to codes the model sees.
const (
	exitNotFound   = 96
	exitEscape     = 97
	exitNotRegular = 95
	exitIO         = 94
	exitNotDir     = 93
	exitHardLink   = 92
	exitDenied     = 91 // the user may not: stderr says which uid
	exitStale      = 90
)

// denied is the shell function the operations call where the environment's user lacks the
// permission they need: it says which user, for the message, and exits.
const denied = `denied() { printf 'uid %s (%s)' "$(id -u)" "$(id -un 2>/dev/null)" >&2; exit 91; }
`

// enterDir is the re-check every shell operation starts with. $1 is the directory policy
// resolved (no symlink in it) and $2 the file's name. It enters the directory with cd -P and
// refuses when pwd -P shows that a component has become a link since, or when the file
// itself has become one; from there on the file is reached as ./name, relative to the
// directory that was checked.
const enterDir = denied + `set -f
cd -P "$1" 2>/dev/null || { [ -d "$1" ] && denied; [ -e "$1" ] && exit 93; exit 96; }
[ "$(pwd -P)" = "$1" ] || exit 97
[ -L "./$2" ] && exit 97
`

// openRegular opens ./$2 once, on descriptor 3, and from then on the file is reached only
// through /proc/$$/fd/3, which reopens the file that descriptor holds whatever its name now
// leads to. What the kernel says it opened (the descriptor's link in /proc) must be the path
// policy resolved: a name swapped for a symbolic link before the open is caught there, and
// one swapped after it no longer matters. The checks (a regular file, one hard link) are made
// on the open file too. A shell has no fstat, so this is the nearest it comes to checking and
// using the same file; without /proc the operation is refused rather than done by name.
const openRegular = `[ -e "./$2" ] || exit 96
[ -f "./$2" ] || exit 95
[ -r "./$2" ] || denied
[ -d /proc/$$/fd ] || { echo "the shell road needs /proc to hold the file it checked" >&2; exit 94; }
exec 3< "./$2" || exit 94
F=/proc/$$/fd/3
[ "$(readlink "$F")" = "$1/$2" ] || exit 97
[ -f "$F" ] || exit 95
links() { set -- $(ls -lLdn "$1"); echo "$2"; }
[ "$(links "$F")" = 1 ] || exit 92
`

// windowScript prints "size lines nul\n" and then, unless the head has a NUL byte, lines
// $3..$4 ($4 = 0: to the end) cut at $5 bytes.
const windowScript = enterDir + openRegular + `size=$(wc -c < "$F") || exit 94
lines=$(awk 'END { print NR }' "$F") || exit 94
all=$(head -c 8192 "$F" | wc -c)
text=$(head -c 8192 "$F" | tr -d '\000' | wc -c)
nul=0; [ "$all" -eq "$text" ] || nul=1
printf '%s %s %s\n' $size $lines $nul
[ $nul = 1 ] && exit 0
if [ "$4" = 0 ]; then sed -n "$3,\$p" "$F"; else sed -n "$3,$4p;$4q" "$F"; fi | head -c "$5"
`

// readScript prints at most $3 bytes of the file.
const readScript = enterDir + openRegular + `head -c "$3" "$F"
`

// writeScript writes stdin to a temporary file beside the target, gives it the old file's
// mode (or the umask's), and renames it over the target. Missing parents are created below
// the deepest existing one, which is entered and checked first. The rename never moves the
// file into a directory that took the target's place. It prints "created" or "overwritten".
const writeScript = denied + `set -f
d=$1
while [ ! -d "$d" ] && [ ! -L "$d" ]; do d=${d%/*}; [ -n "$d" ] || d=/; done
cd -P "$d" 2>/dev/null || { [ -d "$d" ] && denied; exit 97; }
[ "$(pwd -P)" = "$d" ] || exit 97
if [ "$d" != "$1" ]; then
	rel=${1#"$d"}; rel=${rel#/}
	[ -e "./$rel" ] && exit 93
	[ -w . ] || denied
	mkdir -p "./$rel" || exit 93
	cd -P "./$rel" || exit 97
	[ "$(pwd -P)" = "$1" ] || exit 97
fi
[ -L "./$2" ] && exit 97
mode=
if [ -e "./$2" ]; then
	[ -f "./$2" ] || exit 95
	[ "$(ls -ldn "./$2" | awk '{ print $2 }')" = 1 ] || exit 92
	if [ -n "$3" ] && command -v sha256sum >/dev/null 2>&1; then
		[ "$(sha256sum < "./$2" | awk '{ print $1 }')" = "$3" ] || exit 90
	fi
	mode=$(stat -c %a "./$2" 2>/dev/null)
	case $mode in '' | *[!0-7]*)
		mode=$(ls -ldn "./$2" | sed -e 's/^.\(...\)\(...\)\(...\).*/u=\1,g=\2,o=\3/' -e 's/-//g' -e 'y/st/xx/' -e 's/[ST]//g') ;;
	esac
elif [ -n "$3" ]; then
	exit 90
fi
[ -w . ] || denied
tmp=$(mktemp ./.airlock-XXXXXXXXXX) || exit 94
trap 'rm -f "$tmp"' EXIT
cat > "$tmp" || exit 94
if [ -n "$mode" ]; then
	chmod "$mode" "$tmp" || exit 94
	state=overwritten
else
	chmod "$(printf '%o' $((0666 & ~0$(umask))))" "$tmp" || exit 94
	state=created
fi
# Should ./$2 have become a directory (or a link to one) since it was checked, mv would put
# the file inside it. With -T (GNU, busybox) mv renames over ./$2 or refuses; an mv without
# -T (the probe renames the temporary file) is checked afterwards, and what it put inside is
# removed.
if mv -fT "$tmp" "$tmp.T" 2>/dev/null; then
	tmp=$tmp.T
	if ! mv -fT "$tmp" "./$2"; then
		[ -L "./$2" ] && exit 97
		[ -d "./$2" ] && exit 95
		exit 94
	fi
else
	mv -f "$tmp" "./$2" || exit 94
	if [ -L "./$2" ] || [ ! -f "./$2" ]; then
		rm -f "./$2/${tmp#./}"
		[ -L "./$2" ] && exit 97
		exit 95
	fi
fi
trap - EXIT
echo $state
`

// shellFiles reaches files with commands run in the environment.
type shellFiles struct{ env backend.Environment }

// run runs one operation; maxOut is the most stdout it may print, so that the environment's
// cap never cuts (and marks) a file's bytes.
func (s shellFiles) run(ctx context.Context, script string, stdin []byte, maxOut int64, args ...string) (backend.Result, error) {
	req := backend.Request{
		Argv:           append([]string{"sh", "-c", script, "airlock-fileops"}, args...),
		Timeout:        backend.FileOpTimeout,
		MaxOutputBytes: maxOut + 4096,
	}
	if stdin != nil {
		req.Stdin = bytes.NewReader(stdin)
	}
	res, err := s.env.Exec(ctx, req)
	if err != nil {
		return res, fmt.Errorf("fileops: %w", err)
	}
	if res.TimedOut || res.Cancelled {
		return res, fsErr(CodeIOError, "the operation did not finish (timed out or cancelled)")
	}
	switch res.ExitCode {
	case 0:
		return res, nil
	case exitNotFound:
		return res, fsErr(pathpolicy.CodeNotFound, "no such file")
	case exitEscape:
		return res, fsErr(pathpolicy.CodeSymlinkEscape, "the path changed into or through a symbolic link")
	case exitNotRegular:
		return res, fsErr(CodeNotRegular, "not a regular file")
	case exitNotDir:
		return res, fsErr(CodeNotDirectory, "a parent is not a directory")
	case exitHardLink:
		return res, fsErr(pathpolicy.CodeForbiddenPath, "has more than one hard link")
	case exitDenied:
		return res, permissionDenied(strings.TrimSpace(string(res.Stderr)))
	case exitStale:
		return res, fsErr(session.CodeStaleFile, "the file changed since it was read")
	}
	return res, fsErr(CodeIOError, "exit %d: %s", res.ExitCode, bytes.TrimSpace(res.Stderr))
}

func split(p string) (string, string) { return path.Dir(p), path.Base(p) }

func (s shellFiles) window(ctx context.Context, p string, first, last int, max int64) (window, error) {
	dir, base := split(p)
	res, err := s.run(ctx, windowScript, nil, max+1, dir, base, strconv.Itoa(first), strconv.Itoa(last), strconv.FormatInt(max+1, 10))
	if err != nil {
		return window{}, err
	}
	head, body, ok := bytes.Cut(res.Stdout, []byte("\n"))
	f := strings.Fields(string(head))
	if !ok || len(f) != 3 {
		return window{}, fsErr(CodeIOError, "unexpected output %q", head)
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	total, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return window{}, fsErr(CodeIOError, "unexpected output %q", head)
	}
	return window{data: body, total: total, size: size, binary: f[2] == "1"}, nil
}

func (s shellFiles) readAll(ctx context.Context, p string, max int64) ([]byte, error) {
	dir, base := split(p)
	res, err := s.run(ctx, readScript, nil, max+1, dir, base, strconv.FormatInt(max+1, 10))
	if err != nil {
		return nil, err
	}
	if int64(len(res.Stdout)) > max || res.Truncated {
		return nil, tooLarge(res.StdoutBytes, max)
	}
	return res.Stdout, nil
}

func (s shellFiles) notes() []string { return []string{shellRoadNote} }

func (s shellFiles) write(ctx context.Context, p string, data []byte, expect string) (bool, error) {
	dir, base := split(p)
	res, err := s.run(ctx, writeScript, data, 0, dir, base, expect)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(res.Stdout)) == "created", nil
}
