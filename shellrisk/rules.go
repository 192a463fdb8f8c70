package shellrisk

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// RulesConfig is the shape of a rules file: the embedded rules.toml and a user's
// `[approvals.rules]` table both decode into it. Entries in a user's rules are applied after
// the embedded ones: a program table replaces the embedded table of that name, a reason's
// risk replaces the embedded risk, lists are appended. A user can add a reason to the
// hard-deny list but never take one off.
type RulesConfig struct {
	// InfoFlags are arguments that, given alone, only print information (--version).
	InfoFlags []string `toml:"info_flags" json:"info_flags,omitempty"`
	// HijackEnv are environment variables that change which code a command runs.
	HijackEnv []string `toml:"hijack_env" json:"hijack_env,omitempty"`
	// Reasons are the codes the classifier can give, with their risk and the programs that
	// carry the code whenever they run.
	Reasons map[string]ReasonRule `toml:"reasons" json:"reasons,omitempty"`
	// Programs describe programs whose risk depends on flags, subcommands or operands.
	Programs map[string]ProgramRule `toml:"programs" json:"programs,omitempty"`
	// Paths says which paths are sensitive.
	Paths PathRules `toml:"paths" json:"paths,omitempty"`
	// Languages describe code that is not shell (SQL, awk, perl…) given to a program.
	Languages map[string]LanguageRule `toml:"languages" json:"languages,omitempty"`
}

// ReasonRule gives one reason code its risk.
type ReasonRule struct {
	Risk     string `toml:"risk" json:"risk,omitempty"`
	HardDeny bool   `toml:"hard_deny" json:"hard_deny,omitempty"`
	// HostHardDeny refuses the reason in every mode on a backend that is not isolated (the
	// local machine, an SSH host), where it would act on a real machine.
	HostHardDeny bool     `toml:"host_hard_deny" json:"host_hard_deny,omitempty"`
	Doc          string   `toml:"doc" json:"doc,omitempty"`
	Programs     []string `toml:"programs" json:"programs,omitempty"`
}

// ProgramRule describes how one program (or one subcommand of it) is judged. The field
// comments in rules.toml explain each key with examples.
type ProgramRule struct {
	Reason       string                 `toml:"reason" json:"reason,omitempty"`
	Flags        map[string]string      `toml:"flags" json:"flags,omitempty"`
	ValueFlags   []string               `toml:"value_flags" json:"value_flags,omitempty"`
	QueryFlags   []string               `toml:"query_flags" json:"query_flags,omitempty"`
	Operands     map[string]string      `toml:"operands" json:"operands,omitempty"`
	Paths        string                 `toml:"paths" json:"paths,omitempty"`
	PathFlags    map[string]string      `toml:"path_flags" json:"path_flags,omitempty"`
	Recursive    []string               `toml:"recursive" json:"recursive,omitempty"`
	Skip         int                    `toml:"skip" json:"skip,omitempty"`
	SkipUnless   []string               `toml:"skip_unless" json:"skip_unless,omitempty"`
	Keyed        map[string]string      `toml:"keyed" json:"keyed,omitempty"`
	Subcommands  map[string]ProgramRule `toml:"subcommands" json:"subcommands,omitempty"`
	Wrapper      string                 `toml:"wrapper" json:"wrapper,omitempty"`
	ExtraArgs    bool                   `toml:"extra_args" json:"extra_args,omitempty"`
	CodeFlags    []string               `toml:"code_flags" json:"code_flags,omitempty"`
	CodeOperand  bool                   `toml:"code_operand" json:"code_operand,omitempty"`
	AssignCode   bool                   `toml:"assign_code" json:"assign_code,omitempty"`
	Language     string                 `toml:"language" json:"language,omitempty"`
	StdinCode    bool                   `toml:"stdin_code" json:"stdin_code,omitempty"`
	StdinFlags   []string               `toml:"stdin_flags" json:"stdin_flags,omitempty"`
	Expression   bool                   `toml:"expression" json:"expression,omitempty"`
	ExecFlags    []string               `toml:"exec_flags" json:"exec_flags,omitempty"`
	Filters      []string               `toml:"filters" json:"filters,omitempty"`
	MountFlags   []string               `toml:"mount_flags" json:"mount_flags,omitempty"`
	Uploads      bool                   `toml:"uploads" json:"uploads,omitempty"`
	ChangesDir   bool                   `toml:"changes_dir" json:"changes_dir,omitempty"`
	SameShell    bool                   `toml:"same_shell" json:"same_shell,omitempty"`
	ChdirFlags   []string               `toml:"chdir_flags" json:"chdir_flags,omitempty"`
	ValuePaths   map[string]string      `toml:"value_paths" json:"value_paths,omitempty"`
	ValueReasons map[string]string      `toml:"value_reasons" json:"value_reasons,omitempty"`
	WholeFlags   bool                   `toml:"whole_flags" json:"whole_flags,omitempty"`
	WLongOptions bool                   `toml:"w_long_options" json:"w_long_options,omitempty"`
	Signals      string                 `toml:"signals" json:"signals,omitempty"`
	WorkdirFlags []string               `toml:"workdir_flags" json:"workdir_flags,omitempty"`
	// DumpsEnv: with no operands the program prints the environment (env, printenv).
	DumpsEnv bool `toml:"dumps_env" json:"dumps_env,omitempty"`
	// Archives: the program reads its operands whole (tar, zip); a tree among them leaks.
	Archives bool `toml:"archives" json:"archives,omitempty"`
	// ArchiveFile names the flags whose value is the archive itself, read unless one of the
	// flags that make the program write it is given (tar -x -f FILE reads FILE, tar -c -f
	// FILE writes it).
	ArchiveFile *ArchiveFile `toml:"archive_file" json:"archive_file,omitempty"`
	// OldStyle: a first argument of letters without a dash is a cluster of flags whose
	// values are the words after it, in order (tar cfb FILE 20 is tar -c -f FILE -b 20).
	OldStyle bool `toml:"old_style" json:"old_style,omitempty"`
	// Sends: the operands but the last are sent to the last when it is remote (scp,
	// rsync, aws s3 cp).
	Sends bool `toml:"sends" json:"sends,omitempty"`
	// UploadFlags take a file the program sends whole (curl -T, wget --post-file).
	UploadFlags []string `toml:"upload_flags" json:"upload_flags,omitempty"`
	// DefinesRemote: the first operand becomes a name for the second (git remote add).
	DefinesRemote bool `toml:"defines_remote" json:"defines_remote,omitempty"`
	// RepoPrograms: the program may run what the repository's configuration names for its
	// paths (git diff runs a textconv driver an attribute selects); see reason repo_program.
	RepoPrograms bool `toml:"repo_programs" json:"repo_programs,omitempty"`
	// Pushes: the first operand is where the program sends the repository (git push).
	Pushes bool `toml:"pushes" json:"pushes,omitempty"`
	// CallbackArgs: code from a code flag is called with this many more words (mapfile -C
	// CODE calls CODE INDEX LINE).
	CallbackArgs int `toml:"callback_args" json:"callback_args,omitempty"`
	// CodeValues: the second operand is shell code when the first is a key an operands glob
	// gives runs_code (git config core.pager CMD, alias.x '!CMD').
	CodeValues bool `toml:"code_values" json:"code_values,omitempty"`
	// DefaultOperand is the operand a program acts on when given none (grep -r: ".").
	DefaultOperand string `toml:"default_operand" json:"default_operand,omitempty"`
	// FlagSets are flags that carry a reason only together: "-d|--delete -f|--force" =
	// "irreversible_loss" (git branch --delete --force is git branch -D). Each space-separated
	// part is a flag and its other spellings, joined by |.
	FlagSets map[string]string `toml:"flag_sets" json:"flag_sets,omitempty"`
	// SafeValues are, per flag, the globs of values with which the flag carries none of its
	// reasons (git -c user.name=…, a key that runs nothing). Matched lower-cased.
	SafeValues map[string][]string `toml:"safe_values" json:"safe_values,omitempty"`
	// SkipPaths is what a wrapper does to the operands skip passes over (flock FILE CMD
	// creates FILE): a path mode.
	SkipPaths string `toml:"skip_paths" json:"skip_paths,omitempty"`
	// OptionalValueFlags take a value only when it is attached (gawk -o[FILE], -p[FILE]):
	// -o/tmp/x is -o with /tmp/x, -o x is -o and an operand.
	OptionalValueFlags []string `toml:"optional_value_flags" json:"optional_value_flags,omitempty"`
	// ModuleFlags name a module the program runs with the arguments after it (python -m
	// pip list): the call is judged as that program, and as runs_code, since the module is
	// looked up in the working directory first.
	ModuleFlags []string `toml:"module_flags" json:"module_flags,omitempty"`
	// MakesTemp: the program creates a file or directory from a template (mktemp), in the
	// directory a temp_dir_flags flag names, else — with no template or with a -t flag —
	// in $TMPDIR, else where the template says.
	MakesTemp bool `toml:"makes_temp" json:"makes_temp,omitempty"`
	// TempDirFlags name the directory MakesTemp creates in (mktemp -p DIR, --tmpdir=DIR),
	// or with no value, $TMPDIR.
	TempDirFlags []string `toml:"temp_dir_flags" json:"temp_dir_flags,omitempty"`
}

// PathRules lists sensitive paths. Entries may start with ~ (the home directory) and may be
// shell globs (/dev/sd*).
type PathRules struct {
	Roots         []string `toml:"roots" json:"roots,omitempty"`
	System        []string `toml:"system" json:"system,omitempty"`
	Secrets       []string `toml:"secrets" json:"secrets,omitempty"`
	Devices       []string `toml:"devices" json:"devices,omitempty"`
	Harmless      []string `toml:"harmless" json:"harmless,omitempty"`
	Scratch       []string `toml:"scratch" json:"scratch,omitempty"`
	Sockets       []string `toml:"sockets" json:"sockets,omitempty"`
	BinDirs       []string `toml:"bin_dirs" json:"bin_dirs,omitempty"`
	MetadataHosts []string `toml:"metadata_hosts" json:"metadata_hosts,omitempty"`
	// SecretNames are file names (globs) that hold secrets wherever they are (.env);
	// NotSecretNames are the exceptions (.env.example).
	SecretNames    []string `toml:"secret_names" json:"secret_names,omitempty"`
	NotSecretNames []string `toml:"not_secret_names" json:"not_secret_names,omitempty"`
	// NotSecrets are paths under a secret entry that are meant to be shared: public keys.
	NotSecrets []string `toml:"not_secrets" json:"not_secrets,omitempty"`
	// AirlockState are names of Airlock's own files and directories (.airlock, its
	// configuration): a command naming one gives airlock_state.
	AirlockState []string `toml:"airlock_state" json:"airlock_state,omitempty"`
	// VCSConfig are a repository's files that git runs code from (.git/config,
	// .git/hooks): writing one is vcs_config_write, at any depth.
	VCSConfig []string `toml:"vcs_config" json:"vcs_config,omitempty"`
}

// LanguageRule lists case-insensitive substrings of code that carry a reason.
type LanguageRule struct {
	Reason   string            `toml:"reason" json:"reason,omitempty"`
	Patterns map[string]string `toml:"patterns" json:"patterns,omitempty"`
	// StripSpaces removes all whitespace before matching, for languages that ignore it.
	StripSpaces bool `toml:"strip_spaces" json:"strip_spaces,omitempty"`
	// Scanner names a parser in Go that reads the code for what patterns cannot see:
	// "sed" (e, w, r commands) or "awk" (print > file, print | cmd).
	Scanner string `toml:"scanner" json:"scanner,omitempty"`
	// Runs are calls whose first argument is a shell command, or an argument list, that
	// the code runs ("os.system(", "subprocess.run(", "`"); the command is judged.
	Runs []string `toml:"runs" json:"runs,omitempty"`
	// Deletes are calls whose first argument is a path the code deletes: call → "file" or
	// "recursive" ("shutil.rmtree(" = "recursive").
	Deletes map[string]string `toml:"deletes" json:"deletes,omitempty"`
	// NetCalls open connections; SecretReads read the environment or a secret file. Code
	// with both sends secrets out: exfiltration.
	NetCalls    []string `toml:"net_calls" json:"net_calls,omitempty"`
	SecretReads []string `toml:"secret_reads" json:"secret_reads,omitempty"`
}

// Scanners for [LanguageRule.Scanner].
const (
	scannerSed = "sed"
	scannerAwk = "awk"
)

// Path modes: what a program does to its path operands.
const (
	pathsNone   = ""
	pathsRead   = "read"
	pathsWrite  = "write"
	pathsDelete = "delete"
	pathsDest   = "dest" // the last operand is written, the others read (cp, ln)
	pathsMove   = "move" // every operand is removed from where it was (mv)
	// pathsIO: the first operand is read, the second written (uniq IN OUT, xxd IN OUT).
	pathsIO = "io"
	// pathsDestDelete: as dest, but the last operand is emptied (rsync --delete).
	pathsDestDelete = "dest_delete"
	// pathsLink: the last operand is written, the others are link targets (ln -s).
	pathsLink = "link"
	// pathsFirst: the first operand is written; the others are not paths (git bundle
	// create FILE REV…, git worktree add DIR BRANCH).
	pathsFirst = "first"
)

// Signal targets: how a program that signals processes names them.
const (
	signalsPids  = "pids"  // kill PID…: a PID the command started ($!, %job) or another
	signalsNames = "names" // pkill NAME, killall NAME: processes this command did not start
)

// Wrapper kinds: how a program runs the command in its operands.
const (
	wrapArgv     = "argv"     // the operands are a command and its arguments (sudo, nice)
	wrapShell    = "shell"    // the operands are joined into shell code (eval, ssh host CMD)
	wrapDashDash = "dashdash" // the command follows "--" (kubectl exec POD -- CMD)
)

// DefaultRules returns the embedded rules, decoded. The result is a fresh copy.
//
// The rules are rules.toml; rules_data.go is that file decoded once and written out as Go
// (TestRulesData checks that it is), so that a process does not parse 120 KB of TOML by
// reflection on every start — that was a sixth of a cold `airlock exec`'s CPU.
func DefaultRules() (RulesConfig, error) {
	return embeddedRulesData(), nil
}

// ParseRules decodes a rules file in the format of rules.toml, rejecting unknown keys so that
// a misspelt rule is an error rather than a silent no-op.
func ParseRules(data []byte) (RulesConfig, error) {
	var rc RulesConfig
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&rc)
	if err != nil {
		return RulesConfig{}, fmt.Errorf("decode rules: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return RulesConfig{}, fmt.Errorf("decode rules: unknown keys %v", und)
	}
	return rc, nil
}

// merge applies extra on top of rc.
func (rc *RulesConfig) merge(extra RulesConfig) {
	rc.InfoFlags = append(rc.InfoFlags, extra.InfoFlags...)
	rc.HijackEnv = append(rc.HijackEnv, extra.HijackEnv...)
	if rc.Reasons == nil {
		rc.Reasons = map[string]ReasonRule{}
	}
	// A program named in a user's reason moves to that reason.
	for code, r := range extra.Reasons {
		for _, p := range r.Programs {
			for other, or := range rc.Reasons {
				if other != code {
					or.Programs = slices.DeleteFunc(or.Programs, func(s string) bool { return s == p })
					rc.Reasons[other] = or
				}
			}
		}
	}
	for code, r := range extra.Reasons {
		base, ok := rc.Reasons[code]
		if !ok {
			rc.Reasons[code] = r
			continue
		}
		if r.Risk != "" {
			base.Risk = r.Risk
		}
		base.HardDeny = base.HardDeny || r.HardDeny
		base.HostHardDeny = base.HostHardDeny || r.HostHardDeny
		if r.Doc != "" {
			base.Doc = r.Doc
		}
		base.Programs = append(base.Programs, r.Programs...)
		rc.Reasons[code] = base
	}
	if rc.Programs == nil {
		rc.Programs = map[string]ProgramRule{}
	}
	for name, p := range extra.Programs {
		rc.Programs[name] = p
	}
	rc.Paths.Roots = append(rc.Paths.Roots, extra.Paths.Roots...)
	rc.Paths.System = append(rc.Paths.System, extra.Paths.System...)
	rc.Paths.Secrets = append(rc.Paths.Secrets, extra.Paths.Secrets...)
	rc.Paths.Devices = append(rc.Paths.Devices, extra.Paths.Devices...)
	rc.Paths.Harmless = append(rc.Paths.Harmless, extra.Paths.Harmless...)
	rc.Paths.Scratch = append(rc.Paths.Scratch, extra.Paths.Scratch...)
	rc.Paths.Sockets = append(rc.Paths.Sockets, extra.Paths.Sockets...)
	rc.Paths.BinDirs = append(rc.Paths.BinDirs, extra.Paths.BinDirs...)
	rc.Paths.MetadataHosts = append(rc.Paths.MetadataHosts, extra.Paths.MetadataHosts...)
	rc.Paths.SecretNames = append(rc.Paths.SecretNames, extra.Paths.SecretNames...)
	rc.Paths.NotSecretNames = append(rc.Paths.NotSecretNames, extra.Paths.NotSecretNames...)
	rc.Paths.AirlockState = append(rc.Paths.AirlockState, extra.Paths.AirlockState...)
	rc.Paths.VCSConfig = append(rc.Paths.VCSConfig, extra.Paths.VCSConfig...)
	rc.Paths.NotSecrets = append(rc.Paths.NotSecrets, extra.Paths.NotSecrets...)
	if rc.Languages == nil {
		rc.Languages = map[string]LanguageRule{}
	}
	for name, l := range extra.Languages {
		rc.Languages[name] = l
	}
}

// reasonInfo is a compiled [ReasonRule].
type reasonInfo struct {
	risk         Risk
	hardDeny     bool
	hostHardDeny bool
}

// program is a compiled [ProgramRule]: sets instead of lists, and the reason resolved.
type program struct {
	name         string // the rule's name: what a command is judged as
	reason       string
	flags        map[string]string
	valueFlags   map[string]bool
	queryFlags   map[string]bool
	operands     [][2]string // glob, reason; sorted for stable output
	paths        string
	pathFlags    map[string]string
	recursive    map[string]bool
	skip         int
	skipUnless   map[string]bool
	keyed        map[string]string
	subs         map[string]*program
	wrapper      string
	extraArgs    bool
	codeFlags    map[string]bool
	codeOperand  bool
	assignCode   bool
	language     string
	stdinCode    bool
	stdinFlags   map[string]bool
	expression   bool
	execFlags    map[string]bool
	filters      map[string]bool
	mountFlags   map[string]bool
	uploads      bool
	changesDir   bool
	sameShell    bool
	chdirFlags   map[string]bool
	valuePaths   map[string]string
	valueReasons [][3]string // flag, glob, reason; sorted for stable output
	// wholeFlags: -KILL is one flag, not -K -I -L -L.
	wholeFlags bool
	// wLongOptions: -W NAME=VALUE is --NAME=VALUE (awk).
	wLongOptions bool
	// signals is how the program picks the processes it signals: "pids" or "names".
	signals string
	// workdirFlags name the directory the program works in (git -C, make -C).
	workdirFlags map[string]bool
	// defaultOperand is what the program acts on without operands (grep -r, rg: ".").
	defaultOperand string
	codeValues     bool
	callbackArgs   int
	dumpsEnv       bool
	archives       bool
	// archiveFlags take the archive; archiveWriters make the program write it.
	archiveFlags   map[string]bool
	archiveWriters map[string]bool
	oldStyle       bool
	sends          bool
	uploadFlags    map[string]bool
	definesRemote  bool
	pushes         bool
	repoPrograms   bool
	// flagSets are the compiled FlagSets: each set's parts, each part's spellings.
	flagSets     []flagSet
	safeValues   map[string][]string
	skipPaths    string
	makesTemp    bool
	tempDirFlags map[string]bool
	optValues    map[string]bool
	moduleFlags  map[string]bool
	// worstFlag is the reason of the most dangerous thing one of the program's options can
	// do: what an argument that may turn out to be an option is judged as.
	worstFlag string
}

// ruleSet is the compiled form of a [RulesConfig].
type ruleSet struct {
	infoFlags map[string]bool
	hijackEnv []string
	reasons   map[string]reasonInfo
	programs  map[string]*program
	lazy      map[string]*lazyProgram // rules compiled on first use (compile's lazy)
	paths     PathRules
	binDirs   map[string]bool
	languages map[string]LanguageRule
	// secretComps are the secret entries split into components, for matching patterns.
	secretComps [][]string
	// The secret names, lower-cased and sorted by how they match, so that the check every
	// path operand goes through is a map lookup in the common case.
	secretExact    map[string]bool
	secretSuffixes []string // *.pem
	secretPrefixes []string // .env.*
	secretGlobs    []string
	secretPaths    [][]string
}

// nameForms is how many forms of a program name it is looked up under.
const nameForms = 5

// nameForm returns the i-th form a program name is looked up under, most specific first:
// as written, lower-cased (case-insensitive file systems run RM as rm), up to its first dot,
// without a version or variant suffix (python3.12, mkfs.ext4, pip3), and that up to its
// first dot. ok is false where a form does not exist. A lookup tries them one by one,
// without building a list of them.
func nameForm(name string, i int) (string, bool) {
	if i == 0 {
		return name, true
	}
	lower := strings.ToLower(name)
	switch i {
	case 1:
		return lower, lower != ""
	case 2:
		if j := strings.IndexByte(lower, '.'); j > 0 {
			return lower[:j], true
		}
		return "", false
	}
	trimmed := strings.TrimRight(lower, "0123456789.-")
	if i == 3 {
		return trimmed, trimmed != ""
	}
	if j := strings.IndexByte(trimmed, '.'); j > 0 {
		return trimmed[:j], true
	}
	return "", false
}

// hijacks reports whether assigning the environment variable name changes which code
// runs. Entries may be globs (GIT_CONFIG_*).
func (rs *ruleSet) hijacks(name string) bool {
	for _, e := range rs.hijackEnv {
		if e == name {
			return true
		}
		if ok, _ := path.Match(e, name); ok {
			return true
		}
	}
	return false
}

// ArchiveFile is a program's archive operand given by a flag (see Program.ArchiveFile).
type ArchiveFile struct {
	// Flags take the archive's name (-f, --file).
	Flags []string `toml:"flags" json:"flags"`
	// WrittenBy are the flags that make the program write the archive (-c, --create, -r).
	WrittenBy []string `toml:"written_by" json:"written_by"`
}
