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
	path  string   // the state file; empty for a memory session
	lock  *os.File // held for the store's life: one process per session at a time
}

type state struct {
	Denials int `json:"denials"`
	// Files maps a resolved path to the SHA-256 of the content this session last saw there
	// ("absent" for a file it saw missing).
	Files map[string]string `json:"files"`
}

// ErrInUse is returned by Open when another process holds the session.
var ErrInUse = errors.New("session is in use by another airlock process")

// NewMemory returns a session that lives as long as the process.
func NewMemory() *Store { return &Store{state: state{Files: map[string]string{}}} }

// idChars is what an id is made of; its length is checked apart (maxIDLen): a bounded
// repetition in the pattern ({1,128}) compiles to 128 copies of the class, which every
// airlock process paid for at start.
var idChars = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

const maxIDLen = 128

// CheckID reports whether id can name a session: 1-128 letters, digits, dot, underscore
// and dash, and not "." or "..".
func CheckID(id string) error {
	if len(id) > maxIDLen || !idChars.MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("session: id %q: use 1-128 letters, digits, '.', '_' or '-'", id)
	}
	return nil
}

// Open loads (or creates) the session id under dir and holds it until Close; a session held
// by another process gives ErrInUse at once rather than a wait nobody can interrupt. The ID
// may hold letters, digits, dot, underscore and dash.
func Open(dir, id string) (*Store, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, id+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("session %q: %w", id, ErrInUse)
		}
		return nil, fmt.Errorf("session lock: %w", err)
	}
	s := &Store{path: filepath.Join(dir, id+".json"), lock: lock, state: state{Files: map[string]string{}}}
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		_ = lock.Close()
		return nil, fmt.Errorf("session: %w", err)
	default:
		if err := json.Unmarshal(data, &s.state); err != nil {
			_ = lock.Close()
			return nil, fmt.Errorf("session %s: %w", s.path, err)
		}
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

// Close saves a file-backed session — to a temporary file renamed over the old one, so a
// crash leaves the old state or the new, never half — and releases it.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return nil
	}
	err := s.save()
	// Unlock before closing: a child forked at this moment holds a copy of the descriptor
	// until it execs, and would keep the lock alive past Close.
	_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
	cerr := s.lock.Close()
	s.lock = nil
	return errors.Join(err, cerr)
}

func (s *Store) save() error {
	data, err := json.MarshalIndent(s.state, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("session save: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("session save: %w", err)
	}
	return nil
}
