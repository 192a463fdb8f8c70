package backend

import (
	"bytes"
	"strings"
	"testing"
)

func TestCappedBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		max       int64
		writes    []string
		want      string
		truncated bool
	}{
		{"under cap", 10, []string{"abc", "def"}, "abcdef", false},
		{"exact cap", 6, []string{"abc", "def"}, "abcdef", false},
		{"over cap one write", 6, []string{"abcdefghij"}, "abc" + TruncationMarker(4) + "hij", true},
		{"over cap many small writes", 6, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, "abc" + TruncationMarker(4) + "hij", true},
		{"tail wraps", 4, []string{"ab", "cd", "efg", "h", "ij"}, "ab" + TruncationMarker(6) + "ij", true},
		{"odd cap", 5, []string{"123456789"}, "123" + TruncationMarker(4) + "89", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewCappedBuffer(tc.max)
			var total int
			for _, w := range tc.writes {
				n, err := b.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write = %d, %v", n, err)
				}
				total += n
			}
			if got := string(b.Bytes()); got != tc.want {
				t.Errorf("Bytes = %q, want %q", got, tc.want)
			}
			if b.Truncated() != tc.truncated {
				t.Errorf("Truncated = %v", b.Truncated())
			}
			if b.Total() != int64(total) {
				t.Errorf("Total = %d, want %d", b.Total(), total)
			}
		})
	}
}

// TestCappedBufferBoundedMemory writes 1 GiB through a 64 KiB buffer and checks that what it
// keeps never grows past the cap.
func TestCappedBufferBoundedMemory(t *testing.T) {
	t.Parallel()
	b := NewCappedBuffer(64 << 10)
	chunk := bytes.Repeat([]byte("z"), 1<<20)
	copy(chunk, "START")
	for i := 0; i < 1024; i++ {
		if i == 1023 {
			copy(chunk[len(chunk)-3:], "END")
		}
		_, _ = b.Write(chunk)
		chunk[0] = 'z'
		if len(b.head)+len(b.tail) > 64<<10 {
			t.Fatalf("kept %d bytes after %d MiB", len(b.head)+len(b.tail), i+1)
		}
	}
	out := string(b.Bytes())
	if !strings.HasPrefix(out, "START") || !strings.HasSuffix(out, "END") || !b.Truncated() {
		t.Errorf("head/tail/truncation wrong: %q...%q", out[:8], out[len(out)-8:])
	}
	if b.Total() != 1<<30 {
		t.Errorf("Total = %d", b.Total())
	}
}

func FuzzCappedBuffer(f *testing.F) {
	f.Add([]byte("hello world"), uint8(4), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, max, step uint8) {
		if max == 0 || step == 0 {
			return
		}
		b := NewCappedBuffer(int64(max))
		for i := 0; i < len(data); i += int(step) {
			_, _ = b.Write(data[i:min(len(data), i+int(step))])
		}
		out := b.Bytes()
		if int64(len(data)) <= int64(max) {
			if !bytes.Equal(out, data) {
				t.Fatalf("got %q want %q", out, data)
			}
			return
		}
		hc := int(max) - int(max)/2
		tc := int(max) / 2
		want := append(append(append([]byte{}, data[:hc]...), TruncationMarker(int64(len(data)-hc-tc))...), data[len(data)-tc:]...)
		if !bytes.Equal(out, want) {
			t.Fatalf("got %q want %q", out, want)
		}
	})
}
