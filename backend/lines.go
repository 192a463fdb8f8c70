package backend

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
)

// BinaryProbe is how much of a file's head is looked at for NUL bytes: a file with one
// there is binary, and its lines are not read.
const BinaryProbe = 8 << 10

// Lines is what [ReadLines] found.
type Lines struct {
	Data   []byte // lines First..Last, cut at one byte over max (so a caller sees it was cut)
	Total  int    // the number of lines in the whole file
	Binary bool   // a NUL in the first BinaryProbe bytes: nothing else is read
	// SHA256 is the hex digest of the whole file, read to its end to count its lines ("" for
	// a binary file): what the session's stale-file check records for a read, with no second
	// read of the file.
	SHA256 string
}

// ReadLines reads lines first..last of r (last 0: to the end; lines count from 1), keeping
// at most max+1 bytes of them and counting the rest: the one reading behind [FileWindow],
// whether the resident helper serves it or the host's file tools do. size is what r is
// known to hold (the file's stat), or -1: the read buffer is no larger than it needs to be
// (a 64 KiB buffer made and cleared for a file of a few lines was the largest allocation of a
// small read). An error is r's.
func ReadLines(r io.Reader, size int64, first, last int, max int64) (Lines, error) {
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(r, h), readBuffer(size))
	if head, _ := br.Peek(BinaryProbe); bytes.IndexByte(head, 0) >= 0 {
		return Lines{Binary: true}, nil
	}
	var buf bytes.Buffer
	line, atStart := 0, true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atStart {
				line++
			}
			atStart = chunk[len(chunk)-1] == '\n'
			if line >= first && (last == 0 || line <= last) && int64(buf.Len()) <= max {
				buf.Write(chunk[:min(int64(len(chunk)), max+1-int64(buf.Len()))])
			}
		}
		if err == nil || errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return Lines{Data: buf.Bytes(), Total: line, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
		}
		return Lines{}, err
	}
}

// maxReadBuffer is ReadLines' buffer for a file of unknown or large size.
const maxReadBuffer = 64 << 10

// readBuffer is the buffer for a file of size bytes: room for all of it (and the read that
// finds its end), never less than the binary probe, never more than maxReadBuffer. A file
// that grew since its stat is read in more passes, not wrongly.
func readBuffer(size int64) int {
	if size < 0 || size >= maxReadBuffer {
		return maxReadBuffer
	}
	return max(BinaryProbe, int(size)+1)
}
