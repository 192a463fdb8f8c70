package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
)

// Store is one session's state. It is safe for concurrent use.
type Store struct {
	mu    sync.Mutex
	state state
	file  *os.File // nil for a memory session
}

type state struct {
	Denials int `json:"denials"`
	// Files maps a resolved path to the SHA-256 of the content this session last saw there
	// ("absent" for a file it saw missing).
	Files map[string]string `json:"files"`
}

// NewMemory returns a session that lives as long as the process.
func NewMemory() *Store { return &Store{state: state{Files: map[string]string{}}} }

var validID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// Open loads (or creates) the session id under dir and locks it until Close. The ID may hold
// letters, digits, dot, underscore and dash.
func Open(dir, id string) (*Store, error) {
	if !validID.MatchString(id) || id == "." || id == ".." {
		return nil, fmt.Errorf("session: id %q: use 1-128 letters, digits, '.', '_' or '-'", id)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, id+".json"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("session lock: %w", err)
	}
	s := &Store{file: f, state: state{Files: map[string]string{}}}
	dec := json.NewDecoder(f)
	if err := dec.Decode(&s.state); err != nil && !errors.Is(err, os.ErrNotExist) && err.Error() != "EOF" {
		_ = f.Close()
		return nil, fmt.Errorf("session %s: %w", f.Name(), err)
	}
	if s.state.Files == nil {
		s.state.Files = map[string]string{}
	}
	return s, nil
}

// Denials returns how many calls of this session were denied.
func (s *Store) Denials() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Denials
}

// AddDenial counts a denied call.
func (s *Store) AddDenial() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.Denials++
}

// FileHash returns the hash of what this session last saw at path.
func (s *Store) FileHash(path string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.state.Files[path]
	return h, ok
}

// SetFileHash records what this session just read or wrote at path.
func (s *Store) SetFileHash(path, hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.Files[path] = hash
}

// Close saves a file-backed session and releases its lock.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return nil
	}
	data, err := json.MarshalIndent(s.state, "", "  ")
	if err == nil {
		if err = s.file.Truncate(0); err == nil {
			_, err = s.file.WriteAt(append(data, '\n'), 0)
		}
		if err == nil {
			err = s.file.Sync()
		}
	}
	cerr := s.file.Close()
	s.file = nil
	return errors.Join(err, cerr)
}
