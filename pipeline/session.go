package pipeline

import "sync"

// Session is the state a pipeline keeps across the calls of one agent session: how many of
// its calls were denied, so that a model cannot probe the filesystem forever.
type Session interface {
	Denials() int
	AddDenial()
}

// MemorySession keeps session state for the life of the process.
type MemorySession struct {
	mu      sync.Mutex
	denials int
}

// NewMemorySession returns an empty session.
func NewMemorySession() *MemorySession { return &MemorySession{} }

// Denials returns the number of denied calls so far.
func (s *MemorySession) Denials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denials
}

// AddDenial counts one more denied call.
func (s *MemorySession) AddDenial() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denials++
}
