//go:build linux

package sandbox

// SetAfterPut sets the hook s's workers run between listing themselves idle and going back
// to their channel. Call it before anything is run in s.
func (s *Sandbox) SetAfterPut(f func()) { s.afterPut = f }

// Spawned is how many workers the current generation made.
func (s *Sandbox) Spawned() int {
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spawned
}
