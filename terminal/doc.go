// Package terminal owns the `terminal` tool: one shell command run on the configured
// environment, its output shaped for a model to read.
//
// The command string goes to the environment's shell as it is: whether it may run was
// decided before (approval classifies it on a real shell parse), and where it runs is the
// environment's business (process group, timeout, tree kill, output cap). What this package
// adds is the contract with the model: the arguments it may pass, a result that says the
// exit code, whether the command timed out, and where output was cut.
package terminal
