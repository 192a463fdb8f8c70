// Package buildtest builds the Go programs tests run — airlock, airlock-helper, attack and
// probe programs — once per test process, into temporary directories that are removed when
// the package's tests end.
//
// A test process that builds a program into os.MkdirTemp and forgets it leaves megabytes in
// /tmp on every run, and Airlock's rule is "nothing left behind", for its tests too. So every
// such build goes through one [Program], every per-process directory through [MkdirTemp],
// and every test package that reaches one calls [Cleanup] from its TestMain after m.Run
// ([Main] does, for the packages whose tests run the airlock binary as a user would).
package buildtest
