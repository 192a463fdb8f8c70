package helper

import "testing"

func TestParseRunAs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want RunAs
		ok   bool
	}{
		{"1000:1000", RunAs{1000, 1000}, true},
		{"65534:65534", RunAs{65534, 65534}, true},
		{"1000:0", RunAs{1000, 0}, true},
		{"0:0", RunAs{}, false}, // root would share the helper's real user
		{"0:1000", RunAs{}, false},
		{"1000", RunAs{}, false},
		{"node:node", RunAs{}, false},
		{"1000:", RunAs{}, false},
		{"-1:5", RunAs{}, false},
		{"4294967296:1", RunAs{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRunAs(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseRunAs(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}
