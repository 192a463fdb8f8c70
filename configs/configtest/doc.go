// Package configtest edits config text for tests that build a config from a fixture's
// string and a test's own lines.
package configtest
