package backend

// HostDir is implemented by environments whose workspace is a directory on Airlock's own host
// (the local backend). Callers that find it may open files beneath that directory directly,
// with [os.OpenRoot], instead of going through Exec: a root-confined handle cannot be led out
// of the directory by a symlink swapped in after a path was checked.
//
// Remote environments (Docker, SSH) do not implement it; their files are reached only through
// commands that run inside them.
type HostDir interface {
	// HostDir returns the workspace's absolute host path with symlinks resolved; it is the
	// same path as [Description.Workspace].
	HostDir() string
}
