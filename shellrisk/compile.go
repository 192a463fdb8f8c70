package shellrisk

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Compiling a RulesConfig into the lookup tables the walk uses, and checking it.

func set(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

var pathModes = map[string]bool{pathsNone: true, pathsRead: true, pathsWrite: true, pathsDelete: true, pathsDest: true, pathsMove: true, pathsIO: true, pathsDestDelete: true, pathsLink: true, pathsFirst: true}

var wrapperKinds = map[string]bool{"": true, wrapArgv: true, wrapShell: true, wrapDashDash: true}

// compile checks rc and builds the lookup tables. Every reason code a rule names must be
// defined, so a typo cannot quietly make a program safe.
//
// With lazy set, each program's rule is checked and compiled when a command first names the
// program (ruleSet.lookup), not here: for the embedded rules only, which the tests compile
// whole (TestEmbeddedRulesCompile). A cold `airlock exec` names one or two programs of the
// several hundred, and compiling them all was 2.6 of the 3.2 ms the classifier took to build
// here, with 25,000 allocations. Rules from a configuration are always compiled here, so that
// a mistake in one is refused at load, naming its field.
func compile(rc RulesConfig, lazy bool) (*ruleSet, error) {
	rs := &ruleSet{
		infoFlags: set(rc.InfoFlags),
		hijackEnv: rc.HijackEnv,
		reasons:   map[string]reasonInfo{},
		programs:  map[string]*program{},
		paths:     rc.Paths,
		binDirs:   map[string]bool{},
		languages: rc.Languages,
	}
	for _, d := range rc.Paths.BinDirs {
		rs.binDirs[path.Clean(d)] = true
	}
	rs.compileSecrets(rc.Paths)
	codes := make([]string, 0, len(rc.Reasons))
	for code := range rc.Reasons {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	owner := map[string]string{}
	for _, code := range codes {
		r := rc.Reasons[code]
		risk, err := ParseRisk(r.Risk)
		if err != nil {
			return nil, fmt.Errorf("rules: reasons.%s.risk: %w", code, err)
		}
		if r.HardDeny {
			// Refused in every mode is the most a reason can say.
			risk = RiskDangerous
		}
		if r.HostHardDeny {
			risk = RiskDangerous
		}
		rs.reasons[code] = reasonInfo{risk: risk, hardDeny: r.HardDeny, hostHardDeny: r.HostHardDeny}
		for _, p := range r.Programs {
			if prev, dup := owner[p]; dup {
				return nil, fmt.Errorf("rules: program %q is listed under both reasons.%s and reasons.%s", p, prev, code)
			}
			owner[p] = code
		}
	}
	for _, code := range codesUsedByGo {
		if _, ok := rs.reasons[code]; !ok {
			return nil, fmt.Errorf("rules: reasons.%s: not defined", code)
		}
	}
	for lang, l := range rc.Languages {
		if err := rs.checkReason(l.Reason, "languages."+lang+".reason"); err != nil {
			return nil, err
		}
		if l.Scanner != "" && l.Scanner != scannerSed && l.Scanner != scannerAwk {
			return nil, fmt.Errorf("rules: languages.%s.scanner: unknown scanner %q", lang, l.Scanner)
		}
		for pat, code := range l.Patterns {
			if err := rs.checkReason(code, fmt.Sprintf("languages.%s.patterns[%q]", lang, pat)); err != nil {
				return nil, err
			}
		}
	}
	for p, code := range owner {
		if _, ruled := rc.Programs[p]; !ruled || !lazy {
			rs.programs[p] = &program{name: p, reason: code}
		}
	}
	if lazy {
		rs.lazy = make(map[string]*lazyProgram, len(rc.Programs))
	}
	for name, pr := range rc.Programs {
		if lazy {
			rs.lazy[name] = &lazyProgram{rule: pr, owner: owner[name]}
			continue
		}
		prog, err := rs.named(name, pr, owner[name])
		if err != nil {
			return nil, err
		}
		rs.programs[name] = prog
	}
	return rs, nil
}

// named compiles program name's rule, whose reason defaults to owner's.
func (rs *ruleSet) named(name string, pr ProgramRule, owner string) (*program, error) {
	prog, err := rs.compileProgram(pr, "programs."+name)
	if err != nil {
		return nil, err
	}
	if prog.reason == "" {
		prog.reason = owner
	}
	prog.name = name
	return prog, nil
}

// lazyProgram is a program's rule compiled on first use (see compile).
type lazyProgram struct {
	rule  ProgramRule
	owner string
	once  sync.Once
	prog  *program
}

// lookup returns the program named name, compiling its rule the first time. A rule that does
// not compile (the tests keep the embedded ones from that) is no program: an unknown name,
// which is never safe.
func (rs *ruleSet) lookup(name string) (*program, bool) {
	if p, ok := rs.programs[name]; ok {
		return p, true
	}
	l, ok := rs.lazy[name]
	if !ok {
		return nil, false
	}
	l.once.Do(func() { l.prog, _ = rs.named(name, l.rule, l.owner) })
	return l.prog, l.prog != nil
}

// compileSecrets sorts the secret entries and names by how they match.
func (rs *ruleSet) compileSecrets(pr PathRules) {
	for _, e := range pr.Secrets {
		rs.secretComps = append(rs.secretComps, secretComps(e)...)
	}
	rs.secretExact = map[string]bool{}
	for _, n := range pr.SecretNames {
		n = strings.ToLower(n)
		switch {
		case strings.Contains(n, "/"):
			rs.secretPaths = append(rs.secretPaths, strings.Split(strings.Trim(n, "/"), "/"))
		case strings.HasPrefix(n, "*") && !strings.ContainsAny(n[1:], "*?[\\"):
			rs.secretSuffixes = append(rs.secretSuffixes, n[1:])
		case strings.HasSuffix(n, "*") && !strings.ContainsAny(n[:len(n)-1], "*?[\\"):
			rs.secretPrefixes = append(rs.secretPrefixes, n[:len(n)-1])
		case strings.ContainsAny(n, "*?["):
			rs.secretGlobs = append(rs.secretGlobs, n)
		default:
			rs.secretExact[n] = true
		}
	}
}

func (rs *ruleSet) checkReason(code, field string) error {
	if code == "" {
		return nil
	}
	if _, ok := rs.reasons[code]; !ok {
		return fmt.Errorf("rules: %s: unknown reason %q", field, code)
	}
	return nil
}

// compileProgram checks a program's rule and builds what the walker reads, its
// subcommands' too.
func (rs *ruleSet) compileProgram(pr ProgramRule, field string) (*program, error) {
	if err := rs.checkProgram(pr, field); err != nil {
		return nil, err
	}
	p := newProgram(pr)
	if err := rs.compileLists(p, pr, field); err != nil {
		return nil, err
	}
	p.worstFlag = rs.worstFlag(p)
	if len(pr.Subcommands) > 0 {
		p.subs = map[string]*program{}
		for name, sub := range pr.Subcommands {
			sp, err := rs.compileProgram(sub, field+".subcommands."+name)
			if err != nil {
				return nil, err
			}
			p.subs[name] = sp
		}
	}
	return p, nil
}

// checkProgram refuses a rule whose modes, kinds, reasons, globs or flags name nothing the
// classifier knows, naming the field.
func (rs *ruleSet) checkProgram(pr ProgramRule, field string) error {
	if err := rs.checkReason(pr.Reason, field+".reason"); err != nil {
		return err
	}
	if !pathModes[pr.Paths] {
		return fmt.Errorf("rules: %s.paths: unknown mode %q", field, pr.Paths)
	}
	if !pathModes[pr.SkipPaths] {
		return fmt.Errorf("rules: %s.skip_paths: unknown mode %q", field, pr.SkipPaths)
	}
	if !wrapperKinds[pr.Wrapper] {
		return fmt.Errorf("rules: %s.wrapper: unknown kind %q", field, pr.Wrapper)
	}
	if pr.Skip < 0 {
		return fmt.Errorf("rules: %s.skip: must not be negative", field)
	}
	if pr.Language != "" && pr.Language != "shell" {
		if _, ok := rs.languages[pr.Language]; !ok {
			return fmt.Errorf("rules: %s.language: unknown language %q", field, pr.Language)
		}
	}
	if pr.Signals != "" && pr.Signals != signalsPids && pr.Signals != signalsNames {
		return fmt.Errorf("rules: %s.signals: unknown kind %q", field, pr.Signals)
	}
	for flag, globs := range pr.SafeValues {
		for _, g := range globs {
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("rules: %s.safe_values[%q]: %w", field, flag, err)
			}
		}
	}
	if af := pr.ArchiveFile; af != nil {
		for _, f := range af.Flags {
			if !slices.Contains(pr.ValueFlags, f) {
				return fmt.Errorf("rules: %s.archive_file.flags: %q is not one of value_flags", field, f)
			}
		}
	}
	for flag, code := range pr.Flags {
		if err := rs.checkReason(code, fmt.Sprintf("%s.flags[%q]", field, flag)); err != nil {
			return err
		}
	}
	for _, modes := range []struct {
		key string
		m   map[string]string
	}{{"value_paths", pr.ValuePaths}, {"path_flags", pr.PathFlags}, {"keyed", pr.Keyed}} {
		for k, mode := range modes.m {
			if !pathModes[mode] {
				return fmt.Errorf("rules: %s.%s[%q]: unknown mode %q", field, modes.key, k, mode)
			}
		}
	}
	return nil
}

// newProgram copies a checked rule into the form the walker reads (lists become sets).
func newProgram(pr ProgramRule) *program {
	return &program{
		reason:         pr.Reason,
		flags:          pr.Flags,
		valueFlags:     set(pr.ValueFlags),
		queryFlags:     set(pr.QueryFlags),
		paths:          pr.Paths,
		pathFlags:      pr.PathFlags,
		recursive:      set(pr.Recursive),
		skip:           pr.Skip,
		skipUnless:     set(pr.SkipUnless),
		keyed:          pr.Keyed,
		wrapper:        pr.Wrapper,
		extraArgs:      pr.ExtraArgs,
		codeFlags:      set(pr.CodeFlags),
		codeOperand:    pr.CodeOperand,
		assignCode:     pr.AssignCode,
		language:       pr.Language,
		stdinCode:      pr.StdinCode,
		stdinFlags:     set(pr.StdinFlags),
		expression:     pr.Expression,
		execFlags:      set(pr.ExecFlags),
		filters:        set(pr.Filters),
		mountFlags:     set(pr.MountFlags),
		uploads:        pr.Uploads,
		changesDir:     pr.ChangesDir,
		sameShell:      pr.SameShell,
		chdirFlags:     set(pr.ChdirFlags),
		valuePaths:     pr.ValuePaths,
		wholeFlags:     pr.WholeFlags,
		wLongOptions:   pr.WLongOptions,
		signals:        pr.Signals,
		workdirFlags:   set(pr.WorkdirFlags),
		defaultOperand: pr.DefaultOperand,
		codeValues:     pr.CodeValues,
		callbackArgs:   pr.CallbackArgs,
		dumpsEnv:       pr.DumpsEnv,
		archives:       pr.Archives,
		oldStyle:       pr.OldStyle,
		sends:          pr.Sends,
		uploadFlags:    set(pr.UploadFlags),
		definesRemote:  pr.DefinesRemote,
		pushes:         pr.Pushes,
		repoPrograms:   pr.RepoPrograms,
		safeValues:     pr.SafeValues,
		skipPaths:      pr.SkipPaths,
		makesTemp:      pr.MakesTemp,
		tempDirFlags:   set(pr.TempDirFlags),
		optValues:      set(pr.OptionalValueFlags),
		moduleFlags:    set(pr.ModuleFlags),
	}
}

// compileLists builds a program's ordered lists — flag sets, value reasons, operand globs —
// and its archive flags, checking each entry's reason and glob.
func (rs *ruleSet) compileLists(p *program, pr ProgramRule, field string) error {
	for _, key := range slices.Sorted(maps.Keys(pr.FlagSets)) {
		code := pr.FlagSets[key]
		if err := rs.checkReason(code, fmt.Sprintf("%s.flag_sets[%q]", field, key)); err != nil {
			return err
		}
		fs := flagSet{reason: code}
		for _, part := range strings.Fields(key) {
			fs.parts = append(fs.parts, set(strings.Split(part, "|")))
		}
		if len(fs.parts) < 2 {
			return fmt.Errorf("rules: %s.flag_sets[%q]: want two or more flags", field, key)
		}
		p.flagSets = append(p.flagSets, fs)
	}
	for key, code := range pr.ValueReasons {
		flag, glob, ok := strings.Cut(key, " ")
		if !ok {
			return fmt.Errorf("rules: %s.value_reasons[%q]: want \"FLAG GLOB\"", field, key)
		}
		if err := rs.checkReason(code, fmt.Sprintf("%s.value_reasons[%q]", field, key)); err != nil {
			return err
		}
		p.valueReasons = append(p.valueReasons, [3]string{flag, glob, code})
	}
	sort.Slice(p.valueReasons, func(i, j int) bool {
		return p.valueReasons[i][0]+p.valueReasons[i][1] < p.valueReasons[j][0]+p.valueReasons[j][1]
	})
	if af := pr.ArchiveFile; af != nil {
		p.archiveFlags, p.archiveWriters = set(af.Flags), set(af.WrittenBy)
	}
	for glob, code := range pr.Operands {
		if _, err := path.Match(glob, ""); err != nil {
			return fmt.Errorf("rules: %s.operands[%q]: %w", field, glob, err)
		}
		if err := rs.checkReason(code, fmt.Sprintf("%s.operands[%q]", field, glob)); err != nil {
			return err
		}
		p.operands = append(p.operands, [2]string{glob, code})
	}
	sort.Slice(p.operands, func(i, j int) bool { return p.operands[i][0] < p.operands[j][0] })
	return nil
}

// worstFlag is the reason of the program's riskiest flag, which an argument that may turn
// out to be an option ("$x", a glob) is judged as: dynamic_command where an option runs
// code.
func (rs *ruleSet) worstFlag(p *program) string {
	if len(p.codeFlags) > 0 || len(p.execFlags) > 0 {
		return codeDynamicCommand
	}
	worst := ""
	for _, flag := range slices.Sorted(maps.Keys(p.flags)) {
		code := p.flags[flag]
		if code == "no_preserve_root" {
			// Harmless unless / is an operand too, which is judged on its own.
			continue
		}
		// repo_program is given only where commands are unconfined: an option that
		// always runs code is worse at the same risk.
		r, w := rs.reasons[code].risk, rs.reasons[worst].risk
		if r > RiskSafe && (worst == "" || r > w || r == w && worst == codeRepoProgram) {
			worst = code
		}
	}
	return worst
}
