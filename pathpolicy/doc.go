// Package pathpolicy decides whether a tool call may touch the paths it names, on the real,
// resolved target and not on the string a model wrote.
//
// A model can spell one file many ways: relative or absolute, with "..", with Windows
// separators, through a symlink or a symlinked directory. The policy therefore works in two
// steps. The lexical step ([Normalize]) rejects empty paths and NUL bytes, turns backslashes
// into slashes and joins the path with the workspace. The resolution step walks the result
// component by component inside the environment that will do the work (the host, the
// container, the remote machine), following every symlink that exists and stopping at the
// deepest existing parent of a path that does not exist yet. [Decide] then judges the
// resolved target: membership of a root is tested by whole path components with
// [backend.Within], never by string prefix, and deny names match components of the raw, the
// lexical and the resolved path.
//
// Decisions are stable reason codes ([CodeOutsideRoots], [CodeSymlinkEscape], …) with a
// message that tells the model what it may do instead. The package logs nothing: [Normalize]
// and [Decide] are pure, so they can be fuzzed without an environment, and [Policy.Check] only
// reads the environment (one command per call) to resolve paths.
//
// Rules chosen where a choice had to be made:
//
//   - A path may be read inside read_roots or write_roots, written inside write_roots. A root
//     must be a real directory: one that is, or passes through, a symbolic link (its resolved
//     path is not the resolved workspace joined with it, or for an absolute root its own
//     path) admits nothing, since whoever plants the link would choose what it opens. Roots
//     are resolved on every call, so a link planted mid-session is seen. A root that does not
//     exist yet is a root.
//   - A path longer than [MaxPathBytes], or with a component longer than [MaxNameBytes], is
//     invalid; so is a link whose target climbs with ".." out of a missing directory.
//   - A write whose last component is a symbolic link is refused even when the link stays
//     inside the roots (the model is told the target to write instead). A regular file with
//     more than one hard link is refused for reads as for writes ([CodeForbiddenPath]), since
//     its other names may lie anywhere and finding them all would mean scanning every
//     filesystem; the tools check the link count again on the file they open.
//     Writes through symlinked parent directories are allowed when they resolve inside the
//     roots. Reads through symlinks are allowed when the target lies inside the roots.
//   - A missing file is not a denial: Check allows it with [tool.ResolvedPath.Exists] false
//     and the tool fails with [CodeNotFound], which does not count against a denial budget.
//   - A whole-file read (a content reader such as read_file, called with neither offset nor
//     limit) of a file larger than max_read_bytes is denied with [CodeTooLarge]; the message
//     says to read it in parts. A windowed read is allowed and the tool caps what it returns.
//   - A write's size is the UTF-8 length of its "content" and "new_string" arguments.
package pathpolicy
