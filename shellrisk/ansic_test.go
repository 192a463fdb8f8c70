package shellrisk

import "testing"

// TestANSICReadings checks the bash and the busybox reading of $'…' against what each
// shell passed to a program in the differential harness's container (ls $'a\…b', bash
// 5.2 in the C locale, busybox 1.35).
func TestANSICReadings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, bash, busybox string
		locale            bool
	}{
		{in: `\x72\x6d`, bash: "rm", busybox: "rm"},
		{in: `\162\155`, bash: "rm", busybox: "rm"},
		{in: `a\ab\bc\fd\ne\rf\tg\vh`, bash: "a\ab\bc\fd\ne\rf\tg\vh", busybox: "a\ab\bc\fd\ne\rf\tg\vh"},
		{in: `a\\\'\"b`, bash: `a\'"b`, busybox: `a\'"b`},
		{in: `a\eb\Ec`, bash: "a\x1bb\x1bc", busybox: `a\eb\Ec`},
		{in: `a\?b`, bash: "a?b", busybox: `a\?b`},
		{in: `a\cAb`, bash: "a\x01b", busybox: `a\cAb`},
		{in: `a\c?b`, bash: "a\x7fb", busybox: `a\c?b`},
		{in: `a\cb`, bash: "a\x02", busybox: `a\cb`},
		{in: `r\cm`, bash: "r\r", busybox: `r\cm`},
		{in: `a\x4b`, bash: "aK", busybox: "aK"},
		{in: `a\x414b`, bash: "aA4b", busybox: "aA4b"},
		{in: `a\xZb`, bash: `a\xZb`, busybox: `a\xZb`},
		{in: `a\xb`, bash: "a\v", busybox: "a\v"},
		{in: `\u0072m`, bash: "rm", busybox: `\u0072m`},
		{in: `a\U00000041b`, bash: "aAb", busybox: `a\U00000041b`},
		{in: `a\u00e9b`, bash: "aéb", busybox: `a\u00e9b`, locale: true},
		{in: `a\0b`, bash: "a\x00b", busybox: "ab"},
		{in: `a\0000b`, bash: "a\x000b", busybox: "a0b"},
		{in: `a\0101b`, bash: "a\b1b", busybox: "a\b1b"},
		{in: `a\18b`, bash: "a\x018b", busybox: "a\x018b"},
		{in: `a\400b`, bash: "a\x00b", busybox: "a b"},
		{in: `a\8b`, bash: `a\8b`, busybox: `a\8b`},
		{in: `rm\x00x`, bash: "rm\x00x", busybox: "rmx"},
		{in: `\e`, bash: "\x1b", busybox: `\e`},
	} {
		got, locale := decodeANSIC(tc.in)
		if got != tc.bash || locale != tc.locale {
			t.Errorf("decodeANSIC(%q) = %q, %v; want %q, %v", tc.in, got, locale, tc.bash, tc.locale)
		}
		if got := decodeBusyboxANSIC(tc.in); got != tc.busybox {
			t.Errorf("decodeBusyboxANSIC(%q) = %q, want %q", tc.in, got, tc.busybox)
		}
	}
}
