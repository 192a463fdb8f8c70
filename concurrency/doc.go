// Package concurrency owns the batch scheduler: given the tool calls a model proposed in one
// turn, it decides which may run side by side and which must wait, and runs them.
//
// Models emit several tool calls at once. Running them one after another wastes the time of every
// call that had nothing to do with the others; running them all at once lets a read race the
// write the model put before it. Many systems settle this by running the whole batch serially as
// soon as one call is not known to be safe. This package settles it per conflict instead: each
// call declares what it touches ([Scope]), two calls [Conflicts] only when their paths [Overlap]
// and at least one of them writes, and a call waits only for the earlier calls it conflicts
// with. Everything else runs at once, up to [Options.MaxWorkers].
//
// The rules, in the order they apply:
//
//   - A [Scope.Skip] call (denied or invalid) never runs and never delays anything.
//   - A [Scope.NeverParallel] call is a barrier: every earlier call finishes before it starts,
//     and no later call starts until it has finished.
//   - A [Scope.Exclusive] call (a tool that is not parallel-safe and cannot say which paths it
//     touches) is treated as a write on the whole filesystem: it conflicts with every call that
//     declares a path, and with every other Exclusive call, but not with calls that touch no
//     path at all (a web fetch need not wait for a shell command).
//   - Otherwise two calls conflict when one of the paths of the first overlaps one of the paths
//     of the second, by path components, and at least one of the two accesses is a write.
//
// Conflicting calls run in the model's order. A call depends only on earlier calls, so the
// dependencies form no cycle and a batch cannot deadlock; and a call that is ready never waits
// behind an unrelated earlier call that is itself waiting, only for a free worker.
//
// Where a rule must guess, it guesses towards ordering: the zero [Access] counts as a write, and
// a path that is not absolute overlaps every path, since the scheduler cannot know what it is
// relative to. Paths are compared as text: resolving symlinks and the workspace root is the
// policy's job, done before a call reaches the scheduler.
package concurrency
