package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The helper answers a resolve (FileResolve) in a small binary form rather than JSON: the
// path policy resolves every call's paths with one, so a read_file is a resolve and a read,
// and the answer's JSON encode in the helper and decode in Airlock were among the largest
// steps of a small call left (~3 % of the serve load's CPU). The form is fixed by the
// helper's protocol version, as both sides come from one build; the shell resolver's JSON,
// for environments without a helper, is unchanged.
//
// An answer is a uvarint count, then for each path: a uvarint length and the resolved path,
// a flags byte, a kind byte (0 for none), and the link count and size as varints.

// Flags of a resolved path in its encoded form.
const (
	resolvedExists = 1 << iota
	resolvedLink
	resolvedViaLink
	resolvedLoop
	resolvedDotDot
	resolvedFlags = resolvedExists | resolvedLink | resolvedViaLink | resolvedLoop | resolvedDotDot
)

// errResolvedForm marks an answer that does not decode.
var errResolvedForm = errors.New("malformed resolve answer")

// AppendResolved appends rs in the helper's answer form to b.
func AppendResolved(b []byte, rs []ResolvedPath) []byte {
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for _, r := range rs {
		b = binary.AppendUvarint(b, uint64(len(r.Real)))
		b = append(b, r.Real...)
		var flags byte
		for _, f := range []struct {
			set bool
			bit byte
		}{{r.Exists, resolvedExists}, {r.Link, resolvedLink}, {r.ViaLink, resolvedViaLink}, {r.Loop, resolvedLoop}, {r.DotDot, resolvedDotDot}} {
			if f.set {
				flags |= f.bit
			}
		}
		kind := byte(0)
		if r.Kind != "" {
			kind = r.Kind[0]
		}
		b = append(b, flags, kind)
		b = binary.AppendVarint(b, int64(r.Links))
		b = binary.AppendVarint(b, r.Size)
	}
	return b
}

// DecodeResolved reads an answer AppendResolved wrote; anything else, or a kind or flag it
// does not know, is an error.
func DecodeResolved(b []byte) ([]ResolvedPath, error) {
	n, k := binary.Uvarint(b)
	// Each path takes at least five bytes: a count beyond that is a lie, and allocating for
	// it first would let the answer ask for any amount of memory.
	if k <= 0 || n > uint64(len(b)-k)/5 {
		return nil, fmt.Errorf("%w: count", errResolvedForm)
	}
	b = b[k:]
	out := make([]ResolvedPath, n)
	for i := range out {
		var err error
		if out[i], b, err = decodeOneResolved(b); err != nil {
			return nil, fmt.Errorf("%w: path %d: %v", errResolvedForm, i, err)
		}
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last path", errResolvedForm, len(b))
	}
	return out, nil
}

func decodeOneResolved(b []byte) (ResolvedPath, []byte, error) {
	var r ResolvedPath
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return r, nil, errors.New("path length")
	}
	r.Real, b = string(b[k:k+int(l)]), b[k+int(l):]
	if len(b) < 2 {
		return r, nil, errors.New("flags")
	}
	flags, kind := b[0], b[1]
	b = b[2:]
	if flags&^resolvedFlags != 0 {
		return r, nil, fmt.Errorf("flags %#x", flags)
	}
	r.Exists, r.Link, r.ViaLink = flags&resolvedExists != 0, flags&resolvedLink != 0, flags&resolvedViaLink != 0
	r.Loop, r.DotDot = flags&resolvedLoop != 0, flags&resolvedDotDot != 0
	switch kind {
	case 0:
	case 'f', 'd', 'o':
		r.Kind = string(rune(kind))
	default:
		return r, nil, fmt.Errorf("kind %q", kind)
	}
	links, k := binary.Varint(b)
	if k <= 0 || int64(int(links)) != links {
		return r, nil, errors.New("link count")
	}
	r.Links, b = int(links), b[k:]
	size, k := binary.Varint(b)
	if k <= 0 {
		return r, nil, errors.New("size")
	}
	r.Size, b = size, b[k:]
	return r, b, nil
}
