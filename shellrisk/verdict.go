package shellrisk

import (
	"fmt"
	"strings"
)

// Risk orders what a command may do. Higher is worse; a verdict's risk is the highest risk
// of any of its reasons.
type Risk int

// The risks, in order. The zero value is RiskSafe so that an empty verdict is only safe when
// it was built on purpose by Classify.
const (
	RiskSafe    Risk = iota // reads only, with known programs and flags
	RiskWrite               // changes files in the workspace
	RiskNetwork             // talks to the network
	RiskExec                // runs code whose effect cannot be known
	// RiskIrreversible loses work that nothing brings back: uncommitted changes, stashes,
	// unmerged branches, a remote's history (git reset --hard, git clean -fdx, git push
	// --force, rm -rf .git). It asks a person even where writes are allowed.
	RiskIrreversible
	RiskDangerous // destructive beyond the workspace, or a way around the classifier
)

var riskNames = [...]string{"safe", "write", "network", "exec", "irreversible", "dangerous"}

// OnlyWrites reports whether every reason of the verdict is a write in the workspace or an
// irreversible loss of work there: nothing that talks to the network or runs unknown code
// hides behind its risk. allow_irreversible applies only to such verdicts.
func (v Verdict) OnlyWrites() bool {
	for _, r := range v.Reasons {
		if r.Risk != RiskSafe && r.Risk != RiskWrite && r.Risk != RiskIrreversible {
			return false
		}
	}
	return v.Parsed
}

// String returns the risk's lower-case name, as it appears in rules, JSON and receipts.
func (r Risk) String() string {
	if r < 0 || int(r) >= len(riskNames) {
		return fmt.Sprintf("risk(%d)", int(r))
	}
	return riskNames[r]
}

// ParseRisk is the inverse of [Risk.String].
func ParseRisk(s string) (Risk, error) {
	for i, n := range riskNames {
		if strings.EqualFold(s, n) {
			return Risk(i), nil
		}
	}
	return 0, fmt.Errorf("unknown risk %q: want one of %s", s, strings.Join(riskNames[:], ", "))
}

// MarshalText encodes the risk by name.
func (r Risk) MarshalText() ([]byte, error) {
	if r < 0 || int(r) >= len(riskNames) {
		return nil, fmt.Errorf("marshal risk: invalid value %d", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText decodes a risk name.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Reason is one finding of the classifier: a stable snake_case code, the source text that
// triggered it, and the risk the rules give that code.
type Reason struct {
	Code     string `json:"code"`
	Segment  string `json:"segment"`
	Risk     Risk   `json:"risk"`
	HardDeny bool   `json:"hard_deny,omitempty"`
	// HostHardDeny is true when the reason is refused in every mode on a backend that is
	// not isolated (reboot, raw disk reads): it would act on a real machine.
	HostHardDeny bool `json:"host_hard_deny,omitempty"`
}

// Verdict is the classifier's answer for one command.
type Verdict struct {
	Command string   `json:"command"`
	Risk    Risk     `json:"risk"`
	Reasons []Reason `json:"reasons"`
	// HardDeny is true when any reason is on the hard-deny list: the command is refused in
	// every mode, whatever a person or a model says.
	HardDeny bool `json:"hard_deny"`
	// Parsed is false when the command could not be parsed; such a verdict is never safe.
	Parsed bool `json:"parsed"`
	// Commands are the simple commands judged, in the order the walk met them: every
	// program the shell would start, including those run by a wrapper (sudo rm), by code
	// given to a shell (sh -c, eval, ssh HOST CMD), a function body or a loop body. It is
	// empty when the command was not parsed. A shell running the command starts a subset
	// of these (a wrapper that fails does not run what it wraps); a program it starts that
	// is not here is a bug in the classifier.
	Commands []Command `json:"commands"`
}

// Command is one simple command as the classifier resolved it, before anything runs.
type Command struct {
	// Name is the program the rules judged it as: the base name, after quote removal, as
	// looked up (rm for /bin/rm, \rm and r''m; python for python3.12 when python has a
	// rule). It is empty when the name is not known before run time ($x, $(…), a glob).
	Name string `json:"name"`
	// Argv is the argument vector the shell would pass, after quote removal, brace
	// expansion, field splitting and the substitution of what is known (a variable
	// assigned a literal earlier). Parts of a word that are only known at run time are
	// each written as one NUL byte (UnknownMark); a glob is left as its pattern; a word
	// that starts with the home directory (~, $HOME) starts with "~".
	Argv []string `json:"argv"`
	// Unknown lists the indexes in Argv of words that are not known exactly: they hold
	// UnknownMark, an unexpanded glob or a leading "~" for the home directory.
	Unknown []int `json:"unknown,omitempty"`
	// Dynamic is true when Unknown is not empty.
	Dynamic bool `json:"dynamic,omitempty"`
}

// UnknownMark stands in a [Command]'s Argv for each part of a word that is only known at
// run time. A real argument vector cannot hold a NUL byte, so the mark is never ambiguous.
const UnknownMark = dynamicMark

// Codes returns the verdict's reason codes in order, without duplicates.
func (v Verdict) Codes() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range v.Reasons {
		if !seen[r.Code] {
			seen[r.Code] = true
			out = append(out, r.Code)
		}
	}
	return out
}

// HostHardDenyReason returns the first reason refused on hosts, if any.
func (v Verdict) HostHardDenyReason() (Reason, bool) {
	for _, r := range v.Reasons {
		if r.HostHardDeny {
			return r, true
		}
	}
	return Reason{}, false
}

// HardDenyReason returns the first hard-deny reason, if any.
func (v Verdict) HardDenyReason() (Reason, bool) {
	for _, r := range v.Reasons {
		if r.HardDeny {
			return r, true
		}
	}
	return Reason{}, false
}

// FailedClosed reports whether part of the command was not understood — text that did not
// parse, at the top or inside code given to a shell, or input beyond the classifier's
// limits, or a failure of the classifier itself — so that the verdict rests on the worst case, not on what was read. Such a
// verdict is never safe.
func (v Verdict) FailedClosed() bool {
	if !v.Parsed {
		return true
	}
	for _, r := range v.Reasons {
		if r.Code == codeParseError || r.Code == codeTooComplex || r.Code == codeInternalError {
			return true
		}
	}
	return false
}
