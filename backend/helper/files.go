package helper

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
)

// File operations on the wire: the client sends a frameFile with a fileMsg and, for a write,
// DataLen bytes in frameFileData frames; the server runs the operation (fsops.go) once the
// data is complete and answers with the bytes read in frameFileData frames and a
// frameFileDone. An operation cannot be cancelled: it is one open and one read or write.

// fileMsg asks for one file operation; it is backend.FileRequest without the data.
type fileMsg struct {
	Op           string   `json:"op"`
	Path         string   `json:"path"`
	Root         string   `json:"root,omitempty"`
	First        int      `json:"first,omitempty"`
	Last         int      `json:"last,omitempty"`
	MaxBytes     int64    `json:"max_bytes"`
	ExpectSHA256 string   `json:"expect_sha256,omitempty"`
	MinFreeBytes int64    `json:"min_free_bytes,omitempty"`
	DataLen      int64    `json:"data_len,omitempty"`
	Pattern      string   `json:"pattern,omitempty"`
	Glob         string   `json:"glob,omitempty"`
	FilesOnly    bool     `json:"files_only,omitempty"`
	MaxResults   int      `json:"max_results,omitempty"`
	DenyNames    []string `json:"deny_names,omitempty"`
}

// fileDoneMsg ends a file operation.
type fileDoneMsg struct {
	Size    int64  `json:"size"`
	Lines   int    `json:"lines,omitempty"`
	Binary  bool   `json:"binary,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Created bool   `json:"created,omitempty"`
	DataLen int64  `json:"data_len"`
	Code    string `json:"code,omitempty"` // a backend.File* code when the operation failed
	Error   string `json:"error,omitempty"`
}

// maxFileData bounds the data of one write, and what the server buffers for it.
const maxFileData = 64 << 20

// fileIn is a write whose data is still arriving.
type fileIn struct {
	m    fileMsg
	data []byte
}

// handleFile takes a frameFile or frameFileData; like handle it does not wait for the work,
// but for a read of a small file on the reader (see startFile).
func (s *server) handleFile(f frame, onReader bool) error {
	switch f.typ {
	case frameFile:
		s.mu.Lock()
		busy := s.procs[f.id] != nil || s.files[f.id] != nil
		s.mu.Unlock()
		if busy || f.id == 0 {
			return fmt.Errorf("%w: request id %d reused", ErrMalformedFrame, f.id)
		}
		m, err := decodeFileMsg(f.payload)
		if err != nil {
			return s.send(frameFileDone, f.id, fileDoneMsg{Code: backend.FileInvalid, Error: "decode file request: " + err.Error()}.encode())
		}
		if m.DataLen < 0 || m.DataLen > maxFileData {
			return fmt.Errorf("%w: file data of %d bytes (at most %d)", ErrMalformedFrame, m.DataLen, maxFileData)
		}
		if m.DataLen == 0 {
			s.startFile(f.id, m, nil, onReader)
			return nil
		}
		s.mu.Lock()
		if s.files == nil {
			s.files = map[uint32]*fileIn{}
		}
		s.files[f.id] = &fileIn{m: m, data: make([]byte, 0, m.DataLen)}
		s.mu.Unlock()
	case frameFileData:
		s.mu.Lock()
		in := s.files[f.id]
		if in == nil || int64(len(in.data)+len(f.payload)) > in.m.DataLen {
			s.mu.Unlock()
			return fmt.Errorf("%w: file data for request %d beyond what it announced", ErrMalformedFrame, f.id)
		}
		in.data = append(in.data, f.payload...)
		done := int64(len(in.data)) == in.m.DataLen
		if done {
			delete(s.files, f.id)
		}
		s.mu.Unlock()
		if done {
			s.startFile(f.id, in.m, in.data, onReader)
		}
	}
	return nil
}

// startFile runs a file operation and answers it, on a goroutine of its own. On the reader
// (onReader: a goroutine reading the stream, not a restricted thread), a read or a window
// opens its file there, and one of a small file is read and answered there too: a goroutine
// made for it cost the runtime a wake-up of another thread and that thread's sleep after,
// more than the read itself (BenchmarkFileRead: 16-35 % of a read's CPU). Frames behind it
// wait for at most the open and a read of smallRead bytes.
func (s *server) startFile(id uint32, m fileMsg, data []byte, onReader bool) {
	if !s.track() {
		return
	}
	req := backend.FileRequest{
		Op: m.Op, Path: m.Path, Root: m.Root, First: m.First, Last: m.Last,
		MaxBytes: m.MaxBytes, Data: data, ExpectSHA256: m.ExpectSHA256, MinFreeBytes: m.MinFreeBytes,
		Pattern: m.Pattern, Glob: m.Glob, FilesOnly: m.FilesOnly, MaxResults: m.MaxResults, DenyNames: m.DenyNames,
	}
	if !onReader || (req.Op != backend.FileRead && req.Op != backend.FileWindow) {
		go func() {
			defer s.wg.Done()
			s.touch() // here: a restricted reader may not write the mark
			res, err := fileOp(req)
			s.answerFile(id, res, err)
		}()
		return
	}
	s.touch()
	f, st, err := openTarget(req)
	if err != nil || st.Size <= smallRead {
		res, err := readOpened(req, f, st, err)
		s.answerFile(id, res, err)
		s.wg.Done()
		return
	}
	go func() {
		defer s.wg.Done()
		res, err := readOpened(req, f, st, nil)
		s.answerFile(id, res, err)
	}()
}

// touch sets the use mark, when there is one.
func (s *server) touch() {
	if s.opts.TouchFile != "" {
		touch(s.opts.TouchFile)
	}
}

// smallRead is the largest file a read or a window reads on the reader: 256 KiB, read
// from the page cache and hashed in well under a millisecond.
const smallRead = 256 << 10

// answerFile sends a file operation's answer: its data, then its end.
func (s *server) answerFile(id uint32, res backend.FileResult, err error) {
	if err != nil {
		done := fileDoneMsg{Code: backend.FileIO, Error: err.Error()}
		var fe *backend.FileError
		if errors.As(err, &fe) {
			done.Code, done.Error = fe.Code, fe.Msg
		}
		_ = s.send(frameFileDone, id, done.encode())
		return
	}
	done := frame{typ: frameFileDone, id: id, payload: fileDoneMsg{
		Size: res.Size, Lines: res.Lines, Binary: res.Binary, SHA256: res.SHA256,
		Created: res.Created, DataLen: int64(len(res.Data)),
	}.encode()}
	if len(res.Data) > 0 && len(res.Data) <= outputChunk {
		// A small answer goes in one write with its end.
		_ = s.sendFrames(frame{typ: frameFileData, id: id, payload: res.Data}, done)
		return
	}
	if err := s.sendChunks(frameFileData, id, res.Data); err != nil {
		return
	}
	_ = s.sendFrames(done)
}

// fileFrame takes a file operation's answer on the client's side.
func (cl *call) fileFrame(f frame) error {
	if cl.fileDone == nil {
		return fmt.Errorf("%w: file answer %q for a command request %d", ErrMalformedFrame, f.typ, f.id)
	}
	if f.typ == frameFileData {
		cl.add(&cl.stdout, f.payload)
		return nil
	}
	m, err := decodeFileDoneMsg(f.payload)
	if err != nil {
		return fmt.Errorf("%w: file done: %w", ErrMalformedFrame, err)
	}
	select {
	case cl.fileDone <- m:
	default:
		return fmt.Errorf("%w: second answer for file request %d", ErrMalformedFrame, f.id)
	}
	return nil
}

// FileOp runs one file operation in the helper (see [backend.FileOps]). A refusal or a
// filesystem failure is a *backend.FileError; a stream that ended is backend.ErrUnavailable.
func (c *Client) FileOp(ctx context.Context, req backend.FileRequest) (backend.FileResult, error) {
	if err := c.Ready(ctx); err != nil {
		return backend.FileResult{}, err
	}
	if int64(len(req.Data)) > maxFileData {
		return backend.FileResult{}, &backend.FileError{Code: backend.FileTooLarge,
			Msg: fmt.Sprintf("%d bytes to write, over the helper's limit of %d", len(req.Data), maxFileData)}
	}
	m := fileMsg{
		Op: req.Op, Path: req.Path, Root: req.Root, First: req.First, Last: req.Last,
		MaxBytes: req.MaxBytes, ExpectSHA256: req.ExpectSHA256, MinFreeBytes: req.MinFreeBytes, DataLen: int64(len(req.Data)),
		Pattern: req.Pattern, Glob: req.Glob, FilesOnly: req.FilesOnly, MaxResults: req.MaxResults, DenyNames: req.DenyNames,
	}
	cl := &call{
		limit:    max(req.MaxBytes, 0) + 2, // a window returns up to MaxBytes+1
		fileDone: make(chan fileDoneMsg, 1),
		finished: make(chan struct{}),
	}
	id, release := c.register(cl)
	defer release()
	first := []frame{{typ: frameFile, id: id, payload: m.encode()}}
	data := req.Data
	if len(data) > 0 && len(data) <= outputChunk {
		// A small request goes in one write with its data.
		first = append(first, frame{typ: frameFileData, id: id, payload: data})
		data = nil
	}
	if err := c.sendFrames(first...); err != nil {
		c.fail(fmt.Errorf("send: %w", err))
		return backend.FileResult{}, fmt.Errorf("%w: helper: send file request: %w", backend.ErrUnavailable, err)
	}
	for len(data) > 0 {
		n := min(len(data), MaxPayload)
		if err := c.send(frameFileData, id, data[:n]); err != nil {
			c.fail(fmt.Errorf("send: %w", err))
			return backend.FileResult{}, fmt.Errorf("%w: helper: send file data: %w", backend.ErrUnavailable, err)
		}
		data = data[n:]
	}
	select {
	case d := <-cl.fileDone:
		if d.Code != "" {
			return backend.FileResult{}, &backend.FileError{Code: d.Code, Msg: d.Error}
		}
		cl.mu.Lock()
		data := cl.stdout
		cl.mu.Unlock()
		if int64(len(data)) != d.DataLen {
			return backend.FileResult{}, fmt.Errorf("helper: file answer of %d bytes, announced %d", len(data), d.DataLen)
		}
		return backend.FileResult{Data: data, Size: d.Size, Lines: d.Lines, Binary: d.Binary, SHA256: d.SHA256, Created: d.Created}, nil
	case <-c.done:
		return backend.FileResult{}, fmt.Errorf("%w: helper: %w", backend.ErrUnavailable, c.Err())
	case <-ctx.Done():
		return backend.FileResult{}, fmt.Errorf("helper: file operation: %w", ctx.Err())
	}
}
