package backend

import (
	"bufio"
	"bytes"
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
}

// ReadLines reads lines first..last of r (last 0: to the end; lines count from 1), keeping
// at most max+1 bytes of them and counting the rest: the one reading behind [FileWindow],
// whether the resident helper serves it or the host's file tools do. An error is r's.
func ReadLines(r io.Reader, first, last int, max int64) (Lines, error) {
	br := bufio.NewReaderSize(r, 64<<10)
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
			return Lines{Data: buf.Bytes(), Total: line}, nil
		}
		return Lines{}, err
	}
}
