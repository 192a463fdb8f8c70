package backend

import (
	"fmt"
	"regexp"
	"strings"
)

// GitOverrides are the git configuration keys that make git run a program, set at the
// highest precedence git reads (GIT_CONFIG_COUNT, the environment form of `git -c`) to
// values that run nothing. A repository's own config — which the agent can write, directly or
// through a `.git` file pointing at a gitdir elsewhere — can then no longer turn a `git
// status` into a command run as the user.
//
// Git cannot match keys by pattern, so the per-driver keys (diff.<driver>.textconv,
// filter.<driver>.clean/smudge/process, merge.<driver>.driver) cannot be overridden by name.
// They run only for paths that an attribute assigns to the driver: GIT_ATTR_SOURCE set to
// the empty tree makes git ignore the working tree's .gitattributes, and core.attributesFile
// points at /dev/null (GIT_ATTR_SOURCE needs git 2.40; older git still reads the working
// tree's attributes). What remains: a driver named in $GIT_DIR/info/attributes, and
// diff.external, which no value switches off (an empty one, or an empty GIT_EXTERNAL_DIFF,
// makes every `git diff` fail), so it is left as the repository sets it. Where the kernel
// sandbox or a container confines commands, such a program runs inside it like any other
// command; where nothing does, the classifier judges every git command that may run one
// (diff, status, show, blame, log -p, …) as repo_program, which asks a person. Pagers have
// an environment switch that beats every pager.<command> key: GIT_PAGER=cat.
var GitOverrides = []struct{ Key, Value string }{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", "true"},
	{"sequence.editor", "true"},
	{"core.sshCommand", "ssh"},
	{"core.askPass", ""},
	{"core.gitProxy", ""},
	{"core.attributesFile", "/dev/null"},
	{"credential.helper", ""},
	{"gpg.program", "gpg"},
	{"gpg.ssh.program", "ssh-keygen"},
	{"gpg.x509.program", "gpgsm"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"uploadpack.packObjectsHook", ""},
	{"pager.log", "cat"},
	{"pager.diff", "cat"},
	{"pager.show", "cat"},
	{"interactive.diffFilter", ""},
	{"protocol.ext.allow", "never"},
	{"safe.bareRepository", "explicit"},
}

// emptyTree is git's well-known hash of the empty tree.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// gitControlled are the variables that decide what git configuration a command sees; they
// never pass from the host or a request, so the overrides cannot be undone.
func gitControlled(name string) bool {
	return name == "GIT_CONFIG_COUNT" || name == "GIT_CONFIG_PARAMETERS" || name == "GIT_ATTR_SOURCE" ||
		strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_")
}

// gitEnv returns the override variables, leaving out the keys in allow.
func gitEnv(allow []string) map[string]string {
	out := map[string]string{"GIT_ATTR_SOURCE": emptyTree}
	n := 0
	for _, o := range GitOverrides {
		if allowed(allow, o.Key) {
			continue
		}
		out[fmt.Sprintf("GIT_CONFIG_KEY_%d", n)] = o.Key
		out[fmt.Sprintf("GIT_CONFIG_VALUE_%d", n)] = o.Value
		n++
	}
	out["GIT_CONFIG_COUNT"] = fmt.Sprint(n)
	if !allowed(allow, "core.pager") {
		// GIT_PAGER outranks core.pager and every pager.<command>, whatever their names.
		out["GIT_PAGER"] = "cat"
	}
	return out
}

func allowed(allow []string, key string) bool {
	for _, a := range allow {
		if strings.EqualFold(a, key) {
			return true
		}
	}
	return false
}

// credentialURL finds userinfo in a URL: scheme://user:password@host, or a long token used
// as the user name (https://ghp_…@github.com).
var credentialURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://(?:[^/\s:@]*:[^/\s@]+|[^/\s:@]{20,})@`)

// HasURLCredentials reports whether a value carries credentials inside a URL.
func HasURLCredentials(value string) bool { return credentialURL.MatchString(value) }
