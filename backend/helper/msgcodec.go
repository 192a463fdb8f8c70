package helper

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
)

// The start and exit messages are the two every command's round trip carries, and the file
// request and its answer the two of every file operation (a read_file is two: the policy's
// resolve, then the read, whose answer's data is the resolved paths); they are written in a
// small binary form of their own rather than JSON. Measured in the helper on
// the command path (where the thread that decodes has just woken, its caches cold), a JSON
// start took 11 µs to decode and a JSON exit 9 µs on the client's side: with the encodings,
// a tenth of what the helper added to a command. Every other message stays JSON; these are
// flat, and their form is fixed by ProtocolVersion, as both sides come from one build.
//
// A message is a sequence of fields, each a one-byte tag and then its value: a string is a
// uvarint length and its bytes; a list of strings a uvarint count and each string; an
// integer a zigzag varint; a flag its tag alone (present is true). A field at its zero value
// is left out. A tag this build does not know, a tag given twice, or a value that runs past
// the end of the message fails the decode: the message is refused, the stream goes on.

// Tags of startMsg.
const (
	tagArgv           = 'a'
	tagCommand        = 'c'
	tagDir            = 'd'
	tagWorkspace      = 'w'
	tagEnv            = 'e'
	tagSameEnv        = 'E'
	tagStdin          = 'i'
	tagTimeoutMS      = 't'
	tagKillGraceMS    = 'k'
	tagMaxOutputBytes = 'm'
	tagLive           = 'l'
	tagEgressSocket   = 's'
	tagEgressTunnel   = 'T'
)

// Tags of exitMsg.
const (
	tagExitCode    = 'x'
	tagTimedOut    = 'o'
	tagCancelled   = 'c'
	tagTruncated   = 'u'
	tagStdoutBytes = 'O'
	tagStderrBytes = 'E'
	tagDurationNS  = 'd'
	tagError       = 'r'
	tagErrorKind   = 'k'
)

// Tags of fileMsg.
const (
	tagOp           = 'o'
	tagPath         = 'p'
	tagRoot         = 'r'
	tagFirst        = 'f'
	tagLast         = 'l'
	tagFileMax      = 'm'
	tagExpectSHA256 = 'h'
	tagMinFreeBytes = 'F'
	tagFileDataLen  = 'n'
	tagPattern      = 'P'
	tagGlob         = 'g'
	tagFilesOnly    = 'O'
	tagMaxResults   = 'R'
	tagDenyNames    = 'D'
)

// Tags of fileDoneMsg.
const (
	tagSize    = 's'
	tagLines   = 'l'
	tagBinary  = 'b'
	tagSHA256  = 'h'
	tagCreated = 'C'
	tagDoneLen = 'n'
	tagCode    = 'c'
	tagDoneErr = 'r'
)

// Tags of a resolved path (backend.ResolvedPath) in a resolve's answer.
const (
	tagReal    = 'r'
	tagExists  = 'e'
	tagKind    = 'k'
	tagLink    = 'L'
	tagViaLink = 'v'
	tagLoop    = 'o'
	tagDotDot  = 'd'
	tagLinks   = 'n'
	tagRSize   = 's'
)

// errMsgCodec marks a message that does not decode.
var errMsgCodec = errors.New("malformed message")

func (m startMsg) encode() []byte {
	b := make(msgBuf, 0, 64+len(m.Command)+len(m.Dir)+len(m.Workspace)+len(m.EgressSocket)+listLen(m.Argv)+listLen(m.Env))
	b.strs(tagArgv, m.Argv)
	b.str(tagCommand, m.Command)
	b.str(tagDir, m.Dir)
	b.str(tagWorkspace, m.Workspace)
	b.strs(tagEnv, m.Env)
	b.flag(tagSameEnv, m.SameEnv)
	b.flag(tagStdin, m.Stdin)
	b.int(tagTimeoutMS, m.TimeoutMS)
	b.int(tagKillGraceMS, m.KillGraceMS)
	b.int(tagMaxOutputBytes, m.MaxOutputBytes)
	b.flag(tagLive, m.Live)
	b.str(tagEgressSocket, m.EgressSocket)
	b.flag(tagEgressTunnel, m.EgressTunnel)
	return b
}

func decodeStartMsg(p []byte) (startMsg, error) {
	var m startMsg
	r := msgReader{b: p}
	for !r.done() {
		tag, err := r.tag()
		if err != nil {
			return startMsg{}, err
		}
		switch tag {
		case tagArgv:
			m.Argv, err = r.strs()
		case tagCommand:
			m.Command, err = r.str()
		case tagDir:
			m.Dir, err = r.str()
		case tagWorkspace:
			m.Workspace, err = r.str()
		case tagEnv:
			m.Env, err = r.strs()
		case tagSameEnv:
			m.SameEnv = true
		case tagStdin:
			m.Stdin = true
		case tagTimeoutMS:
			m.TimeoutMS, err = r.int()
		case tagKillGraceMS:
			m.KillGraceMS, err = r.int()
		case tagMaxOutputBytes:
			m.MaxOutputBytes, err = r.int()
		case tagLive:
			m.Live = true
		case tagEgressSocket:
			m.EgressSocket, err = r.str()
		case tagEgressTunnel:
			m.EgressTunnel = true
		default:
			return startMsg{}, fmt.Errorf("%w: start: unknown field %q", errMsgCodec, tag)
		}
		if err != nil {
			return startMsg{}, fmt.Errorf("start: field %q: %w", tag, err)
		}
	}
	return m, nil
}

func (m exitMsg) encode() []byte {
	b := make(msgBuf, 0, 48+len(m.Error)+len(m.ErrorKind))
	b.int(tagExitCode, int64(m.ExitCode))
	b.flag(tagTimedOut, m.TimedOut)
	b.flag(tagCancelled, m.Cancelled)
	b.flag(tagTruncated, m.Truncated)
	b.int(tagStdoutBytes, m.StdoutBytes)
	b.int(tagStderrBytes, m.StderrBytes)
	b.int(tagDurationNS, m.DurationNS)
	b.str(tagError, m.Error)
	b.str(tagErrorKind, m.ErrorKind)
	return b
}

func decodeExitMsg(p []byte) (exitMsg, error) {
	var m exitMsg
	r := msgReader{b: p}
	for !r.done() {
		tag, err := r.tag()
		if err != nil {
			return exitMsg{}, err
		}
		switch tag {
		case tagExitCode:
			m.ExitCode, err = r.intN()
		case tagTimedOut:
			m.TimedOut = true
		case tagCancelled:
			m.Cancelled = true
		case tagTruncated:
			m.Truncated = true
		case tagStdoutBytes:
			m.StdoutBytes, err = r.int()
		case tagStderrBytes:
			m.StderrBytes, err = r.int()
		case tagDurationNS:
			m.DurationNS, err = r.int()
		case tagError:
			m.Error, err = r.str()
		case tagErrorKind:
			m.ErrorKind, err = r.str()
		default:
			return exitMsg{}, fmt.Errorf("%w: exit: unknown field %q", errMsgCodec, tag)
		}
		if err != nil {
			return exitMsg{}, fmt.Errorf("exit: field %q: %w", tag, err)
		}
	}
	return m, nil
}

func (m fileMsg) encode() []byte {
	b := make(msgBuf, 0, 64+len(m.Path)+len(m.Root)+len(m.Pattern)+len(m.Glob)+len(m.ExpectSHA256)+listLen(m.DenyNames))
	b.str(tagOp, m.Op)
	b.str(tagPath, m.Path)
	b.str(tagRoot, m.Root)
	b.int(tagFirst, int64(m.First))
	b.int(tagLast, int64(m.Last))
	b.int(tagFileMax, m.MaxBytes)
	b.str(tagExpectSHA256, m.ExpectSHA256)
	b.int(tagMinFreeBytes, m.MinFreeBytes)
	b.int(tagFileDataLen, m.DataLen)
	b.str(tagPattern, m.Pattern)
	b.str(tagGlob, m.Glob)
	b.flag(tagFilesOnly, m.FilesOnly)
	b.int(tagMaxResults, int64(m.MaxResults))
	b.strs(tagDenyNames, m.DenyNames)
	return b
}

func decodeFileMsg(p []byte) (fileMsg, error) {
	var m fileMsg
	r := msgReader{b: p}
	for !r.done() {
		tag, err := r.tag()
		if err != nil {
			return fileMsg{}, err
		}
		switch tag {
		case tagOp:
			m.Op, err = r.str()
		case tagPath:
			m.Path, err = r.str()
		case tagRoot:
			m.Root, err = r.str()
		case tagFirst:
			m.First, err = r.intN()
		case tagLast:
			m.Last, err = r.intN()
		case tagFileMax:
			m.MaxBytes, err = r.int()
		case tagExpectSHA256:
			m.ExpectSHA256, err = r.str()
		case tagMinFreeBytes:
			m.MinFreeBytes, err = r.int()
		case tagFileDataLen:
			m.DataLen, err = r.int()
		case tagPattern:
			m.Pattern, err = r.str()
		case tagGlob:
			m.Glob, err = r.str()
		case tagFilesOnly:
			m.FilesOnly = true
		case tagMaxResults:
			m.MaxResults, err = r.intN()
		case tagDenyNames:
			m.DenyNames, err = r.strs()
		default:
			return fileMsg{}, fmt.Errorf("%w: file request: unknown field %q", errMsgCodec, tag)
		}
		if err != nil {
			return fileMsg{}, fmt.Errorf("file request: field %q: %w", tag, err)
		}
	}
	return m, nil
}

func (m fileDoneMsg) encode() []byte {
	b := make(msgBuf, 0, 48+len(m.SHA256)+len(m.Code)+len(m.Error))
	b.int(tagSize, m.Size)
	b.int(tagLines, int64(m.Lines))
	b.flag(tagBinary, m.Binary)
	b.str(tagSHA256, m.SHA256)
	b.flag(tagCreated, m.Created)
	b.int(tagDoneLen, m.DataLen)
	b.str(tagCode, m.Code)
	b.str(tagDoneErr, m.Error)
	return b
}

func decodeFileDoneMsg(p []byte) (fileDoneMsg, error) {
	var m fileDoneMsg
	r := msgReader{b: p}
	for !r.done() {
		tag, err := r.tag()
		if err != nil {
			return fileDoneMsg{}, err
		}
		switch tag {
		case tagSize:
			m.Size, err = r.int()
		case tagLines:
			m.Lines, err = r.intN()
		case tagBinary:
			m.Binary = true
		case tagSHA256:
			m.SHA256, err = r.str()
		case tagCreated:
			m.Created = true
		case tagDoneLen:
			m.DataLen, err = r.int()
		case tagCode:
			m.Code, err = r.str()
		case tagDoneErr:
			m.Error, err = r.str()
		default:
			return fileDoneMsg{}, fmt.Errorf("%w: file answer: unknown field %q", errMsgCodec, tag)
		}
		if err != nil {
			return fileDoneMsg{}, fmt.Errorf("file answer: field %q: %w", tag, err)
		}
	}
	return m, nil
}

// encodeResolved is a resolve's answer (backend.FileResolve): the count of paths, then each
// path as a message of its own, behind its length.
func encodeResolved(rs []backend.ResolvedPath) []byte {
	b := binary.AppendUvarint(nil, uint64(len(rs)))
	for _, r := range rs {
		m := make(msgBuf, 0, 24+len(r.Real))
		m.str(tagReal, r.Real)
		m.flag(tagExists, r.Exists)
		m.str(tagKind, r.Kind)
		m.flag(tagLink, r.Link)
		m.flag(tagViaLink, r.ViaLink)
		m.flag(tagLoop, r.Loop)
		m.flag(tagDotDot, r.DotDot)
		m.int(tagLinks, int64(r.Links))
		m.int(tagRSize, r.Size)
		b = binary.AppendUvarint(b, uint64(len(m)))
		b = append(b, m...)
	}
	return b
}

// DecodeResolved reads a resolve's answer from the helper (see encodeResolved).
func DecodeResolved(p []byte) ([]backend.ResolvedPath, error) {
	r := msgReader{b: p}
	n, err := r.uvarint()
	// Each path takes at least its length's byte: a count beyond what is left is a lie, and
	// allocating for it first would let the answer ask for any amount of memory.
	if err == nil && n > uint64(len(r.b)) {
		err = fmt.Errorf("%w: %d paths in %d bytes", errMsgCodec, n, len(r.b))
	}
	if err != nil {
		return nil, fmt.Errorf("resolve answer: %w", err)
	}
	out := make([]backend.ResolvedPath, n)
	for i := range out {
		m, err := r.bytes()
		if err == nil {
			out[i], err = decodeResolvedPath(m)
		}
		if err != nil {
			return nil, fmt.Errorf("resolve answer: path %d: %w", i, err)
		}
	}
	if !r.done() {
		return nil, fmt.Errorf("resolve answer: %w: %d bytes after the last path", errMsgCodec, len(r.b))
	}
	return out, nil
}

func decodeResolvedPath(p []byte) (backend.ResolvedPath, error) {
	var rp backend.ResolvedPath
	r := msgReader{b: p}
	for !r.done() {
		tag, err := r.tag()
		if err != nil {
			return rp, err
		}
		switch tag {
		case tagReal:
			rp.Real, err = r.str()
		case tagExists:
			rp.Exists = true
		case tagKind:
			if rp.Kind, err = r.str(); err == nil && rp.Kind != "f" && rp.Kind != "d" && rp.Kind != "o" {
				err = fmt.Errorf("%w: kind %q", errMsgCodec, rp.Kind)
			}
		case tagLink:
			rp.Link = true
		case tagViaLink:
			rp.ViaLink = true
		case tagLoop:
			rp.Loop = true
		case tagDotDot:
			rp.DotDot = true
		case tagLinks:
			rp.Links, err = r.intN()
		case tagRSize:
			rp.Size, err = r.int()
		default:
			return rp, fmt.Errorf("%w: unknown field %q", errMsgCodec, tag)
		}
		if err != nil {
			return rp, fmt.Errorf("field %q: %w", tag, err)
		}
	}
	return rp, nil
}

// msgBuf is a message being encoded.
type msgBuf []byte

func (b *msgBuf) str(tag byte, s string) {
	if s != "" {
		*b = append(*b, tag)
		b.rawStr(s)
	}
}

func (b *msgBuf) rawStr(s string) {
	*b = binary.AppendUvarint(*b, uint64(len(s)))
	*b = append(*b, s...)
}

func (b *msgBuf) strs(tag byte, ss []string) {
	if len(ss) == 0 {
		return
	}
	*b = append(*b, tag)
	*b = binary.AppendUvarint(*b, uint64(len(ss)))
	for _, s := range ss {
		b.rawStr(s)
	}
}

func (b *msgBuf) int(tag byte, v int64) {
	if v != 0 {
		*b = append(*b, tag)
		*b = binary.AppendVarint(*b, v)
	}
}

func (b *msgBuf) flag(tag byte, v bool) {
	if v {
		*b = append(*b, tag)
	}
}

// listLen is what a list of strings takes encoded, near enough to size the buffer.
func listLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s) + 2
	}
	return n
}

// msgReader decodes a message's fields in turn.
type msgReader struct {
	b    []byte
	seen [4]uint64 // tags read so far, one bit each
}

func (r *msgReader) done() bool { return len(r.b) == 0 }

func (r *msgReader) tag() (byte, error) {
	t := r.b[0]
	r.b = r.b[1:]
	word, bit := t/64, uint64(1)<<(t%64)
	if r.seen[word]&bit != 0 {
		return 0, fmt.Errorf("%w: field %q given twice", errMsgCodec, t)
	}
	r.seen[word] |= bit
	return t, nil
}

func (r *msgReader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad length", errMsgCodec)
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *msgReader) str() (string, error) {
	b, err := r.bytes()
	return string(b), err
}

// bytes is a length and that many bytes, not copied.
func (r *msgReader) bytes() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: %d bytes in %d", errMsgCodec, n, len(r.b))
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b, nil
}

func (r *msgReader) strs() ([]string, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	// Every string takes at least its length's byte: a count beyond what is left is a lie,
	// and allocating for it first would let a peer ask for any amount of memory.
	if n > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: %d strings in %d bytes", errMsgCodec, n, len(r.b))
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = r.str(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *msgReader) int() (int64, error) {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad integer", errMsgCodec)
	}
	r.b = r.b[n:]
	return v, nil
}

// intN is int for a field of Go type int: a value beyond it is refused, not wrapped.
func (r *msgReader) intN() (int, error) {
	v, err := r.int()
	if err == nil && int64(int(v)) != v {
		return 0, fmt.Errorf("%w: %d out of range", errMsgCodec, v)
	}
	return int(v), err
}
