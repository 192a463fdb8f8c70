package main

import (
	"os"
	"time"

	"golang.org/x/term"
)

// approvalPromptTimeout is how long a person has to answer; no answer is a denial.
const approvalPromptTimeout = 5 * time.Minute

// openPromptTTY returns the controlling terminal when a person is there to answer: stderr
// is a terminal. Stdin may carry the batch (airlock call), so prompts go through /dev/tty.
// Without one, calls that need a person are refused.
func openPromptTTY(s stdio) *os.File {
	f, ok := s.err.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return tty
}
