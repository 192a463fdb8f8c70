package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/clientconfig"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	register(command{name: "install", summary: "plug airlock mcp into a coding agent: " + strings.Join(clientconfig.Clients, ", "), run: runInstall})
}

func runInstall(args []string, s stdio) int {
	usage := "install " + strings.Join(clientconfig.Clients, "|") + " [--project|--user] [--print|--check] [--config FILE] [--client-bin PATH]"
	var cfgFile, bin, clientBin string
	var project, user, print, check bool
	fs := newFlagSet("install", usage, s)
	fs.StringVar(&cfgFile, "config", os.Getenv("AIRLOCK_CONFIG"), "the config airlock mcp runs with (default: ./airlock.toml when present)")
	fs.BoolVar(&project, "project", false, "write the project's files (default, except for codex)")
	fs.BoolVar(&user, "user", false, "write the user's files under $HOME (default for codex)")
	fs.BoolVar(&print, "print", false, "print what would be written and change nothing")
	fs.StringVar(&bin, "command", "", "the airlock binary the client starts (default: this one)")
	fs.StringVar(&clientBin, "client-bin", "", "the client's binary, run once against a loopback probe to learn its tools (default: claude or codex on PATH)")
	fs.BoolVar(&check, "check", false, "change nothing: run the client and say what it will really do (server connected, folder trusted, tools allowed, its own tools off)")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if code, done := parseFlags(fs, args); done {
			return code
		}
		fmt.Fprintf(s.err, "Usage: airlock %s\n", usage)
		return 2
	}
	client := args[0]
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	if project && user {
		return fail(s, fmt.Errorf("install: --project and --user are exclusive"))
	}
	t, err := installTarget(client, project, user, bin)
	if err != nil {
		return fail(s, fmt.Errorf("install: %w", err))
	}
	created, notes, err := installConfig(&t, cfgFile)
	if err != nil {
		return fail(s, err)
	}
	if check {
		return checkInstall(t, clientBin, s)
	}
	if client == clientconfig.ClaudeCode {
		t.ClientTools = probeClaudeTools(clientBin, t.ProjectDir)
	}
	changes, planNotes, err := clientconfig.Plan(t)
	notes = append(notes, planNotes...)
	if err != nil {
		return fail(s, fmt.Errorf("install %s: %w", client, err))
	}
	if created != nil && !created.Existed {
		changes = append([]clientconfig.Change{*created}, changes...)
	}
	if print {
		for _, c := range changes {
			fmt.Fprintf(s.out, "# %s\n%s\n", c.Path, c.Content)
		}
		for _, n := range notes {
			fmt.Fprintf(s.out, "# note: %s\n", n)
		}
		return 0
	}
	if err := clientconfig.Apply(changes); err != nil {
		return fail(s, fmt.Errorf("install %s: %w", client, err))
	}
	for _, c := range changes {
		verb := "updated"
		if !c.Existed {
			verb = "created"
		}
		fmt.Fprintf(s.out, "%s %s\n", verb, c.Path)
	}
	for _, n := range notes {
		fmt.Fprintf(s.out, "note: %s\n", n)
	}
	return 0
}

// installTarget says what install writes for client: in which scope, for which home and
// project, starting which airlock binary (this one, symlinks resolved, unless bin names one).
func installTarget(client string, project, user bool, bin string) (clientconfig.Target, error) {
	t := clientconfig.Target{Client: client, CodexHome: os.Getenv("CODEX_HOME")}
	switch {
	case project:
		t.Scope = clientconfig.Project
	case user:
		t.Scope = clientconfig.User
	}
	var err error
	if t.Home, err = os.UserHomeDir(); err != nil {
		return t, err
	}
	if t.ProjectDir, err = os.Getwd(); err != nil {
		return t, err
	}
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return t, err
		}
		if r, err := filepath.EvalSymlinks(bin); err == nil {
			bin = r
		}
	}
	t.Command, t.Args = bin, []string{"mcp"}
	return t, nil
}

// installConfig points t's server at its config: cfgFile, else ./airlock.toml, else one
// made in the project's state directory (returned as created, to be written with the
// client's files). A named config the server could not start with is refused now, and one
// inside the workspace gets a note.
func installConfig(t *clientconfig.Target, cfgFile string) (created *clientconfig.Change, notes []string, err error) {
	if cfgFile == "" {
		if _, err := os.Stat(configs.DefaultFile); err == nil {
			cfgFile = configs.DefaultFile
		} else if created, err = projectConfig(t.ProjectDir); err != nil {
			return nil, nil, fmt.Errorf("install: %w", err)
		} else {
			t.Args = append(t.Args, "--config", created.Path)
			return created, nil, nil
		}
	}
	cfg, err := configs.Load(cfgFile)
	if err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(cfg.File)
	if err != nil {
		return nil, nil, err
	}
	t.Args = append(t.Args, "--config", abs)
	if rel, err := filepath.Rel(cfg.WorkspaceDir(), abs); err == nil && !strings.HasPrefix(rel, "..") {
		notes = append(notes, abs+" lies inside the workspace: commands cannot change it through Airlock, but the "+
			"client's and your other tools can; keep it outside (without --config and ./airlock.toml, install writes one there)")
	}
	return nil, notes, nil
}

// projectConfig is the config install points a client at when none is named: in the
// project's state directory, outside the workspace (where the ledger already lives by
// default), with the project as the local workspace. An existing one is kept as it is.
func projectConfig(projectDir string) (*clientconfig.Change, error) {
	path := filepath.Join(configs.StateDirFor(os.Getenv("XDG_STATE_HOME"), projectDir), "airlock.toml")
	if _, err := os.Stat(path); err == nil {
		return &clientconfig.Change{Path: path, Existed: true}, nil
	}
	content := fmt.Sprintf("# Airlock's config for %s, written by airlock install outside the workspace so that\n"+
		"# nothing working in the workspace can change it. See docs/configuration.md.\n"+
		"[environment]\ntype = \"local\"\nworkspace = %s\n\n[approvals]\nmode = \"manual\"\nallow_write = true\n",
		projectDir, strconv.Quote(projectDir))
	return &clientconfig.Change{Path: path, Content: []byte(content)}, nil
}
