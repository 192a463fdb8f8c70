// Package session owns what Airlock remembers across the calls of one agent session: how
// many calls were denied (so a model cannot probe forever) and, for every file the session
// read or wrote, the hash of the content it saw — so that a write over somebody else's change
// is refused with stale_file instead of silently losing their update.
//
// A session lives in memory for one process, or in a JSON file in the sessions directory beside the ledger when
// the CLI is given --session ID, so that a conversation of many turns, each one `airlock call`,
// keeps its state. The file is locked while a process uses it.
package session
