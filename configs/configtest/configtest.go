package configtest

import "strings"

// AskToRunCode makes a person approve commands that run code (`node -e`), which approval
// tests use as "a command that waits for a person": where the sandbox confines commands,
// such a command otherwise runs unasked ([approvals] ask_to_run_code). A config that
// already sets the key is returned as it is.
func AskToRunCode(cfg string) string {
	if strings.Contains(cfg, "ask_to_run_code") {
		return cfg
	}
	if i := strings.Index(cfg, "[approvals]\n"); i >= 0 {
		i += len("[approvals]\n")
		return cfg[:i] + "ask_to_run_code = true\n" + cfg[i:]
	}
	return cfg + "\n[approvals]\nask_to_run_code = true\n"
}
