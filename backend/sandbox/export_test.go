//go:build linux

package sandbox

// SetAfterPut sets the hook a worker runs between listing itself idle and going back to its
// channel, until restore is called.
func SetAfterPut(f func()) (restore func()) {
	afterPut = f
	return func() { afterPut = nil }
}

// Spawned is how many workers the current generation made.
func (s *Sandbox) Spawned() int {
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spawned
}
