package shellrisk

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// The shells read $'…' three ways. bash decodes C escapes, and the program gets the result
// as a C string, so a NUL ends it ($'rm\x00x' is rm); a \u or \U escape beyond ASCII is
// written in the locale's character set, which the classifier cannot know. dash has no
// $'…': it reads a $ and a single-quoted string ($'\x72m' is the text $\x72m). busybox sh
// decodes fewer escapes than bash and keeps the others as written, backslash and all (\e,
// \cX, \u, \?), and drops a NUL byte instead of ending the word there ($'rm\x00x' is
// rmx). The bash reading is decodeANSIC, the dash reading is in resolve, the busybox
// reading is decodeBusyboxANSIC.

// decodeANSIC decodes the body of a bash $'…' string, where $'\x72\x6d' is rm. locale is
// true when the result depends on the locale (a \u00e9 is é in a UTF-8 locale and stays
// \u00E9 in the C locale).
func decodeANSIC(s string) (out string, locale bool) {
	if !strings.Contains(s, `\`) {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		e := s[i]
		if x, ok := ansicEscapes[e]; ok {
			b.WriteByte(x)
			continue
		}
		switch e {
		case 'c':
			i = ansicControl(&b, s, i)
		case 'x', 'u', 'U':
			var wide bool
			i, wide = ansicHex(&b, s, i)
			locale = locale || wide
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			// \\, \', \", \? and unknown escapes stand for the character itself.
			if e != '\\' && e != '\'' && e != '"' && e != '?' {
				b.WriteByte('\\')
			}
			b.WriteByte(e)
		}
	}
	return b.String(), locale
}

// ansicEscapes are bash's one-letter $'…' escapes.
var ansicEscapes = map[byte]byte{
	'a': '\a', 'b': '\b', 'e': 0x1b, 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
}

// ansicControl writes the control character of the \c escape whose c is at s[i] and returns
// the index of its last byte. bash's TOCTRL: \c? is DEL, any other character is its upper
// case's control code (\ca and \cA are both 0x01); the \\ of \c\\ counts as one backslash.
func ansicControl(b *strings.Builder, s string, i int) int {
	if i+1 >= len(s) {
		return i
	}
	i++
	x := s[i]
	if x == '\\' && i+1 < len(s) && s[i+1] == '\\' {
		i++
	}
	switch {
	case x == '?':
		b.WriteByte(0x7f)
	case x >= 'a' && x <= 'z':
		b.WriteByte((x - 'a' + 'A') & 0x1f)
	default:
		b.WriteByte(x & 0x1f)
	}
	return i
}

// ansicHex writes the \x, \u or \U escape whose letter is at s[i] (up to 2, 4 or 8 hex
// digits; none leaves the escape as written) and returns the index of its last byte, and
// whether it wrote a character beyond ASCII, which depends on the locale.
func ansicHex(b *strings.Builder, s string, i int) (int, bool) {
	e := s[i]
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
	j := i + 1
	for j < len(s) && j-i-1 < width && isHex(s[j]) {
		j++
	}
	if j == i+1 {
		b.WriteByte('\\')
		b.WriteByte(e)
		return i, false
	}
	n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
	if e == 'x' || n < utf8.RuneSelf {
		b.WriteByte(byte(n))
		return j - 1, false
	}
	if utf8.ValidRune(rune(n)) {
		b.WriteRune(rune(n))
	}
	return j - 1, true
}

// decodeBusyboxANSIC decodes the body of a $'…' string as busybox sh does (shell/ash.c,
// decode_dollar_squote): \" \' \\ \a \b \f \n \r \t \v, \xHH with one or two hex digits
// and \ddd with one to three octal digits, where a digit that would take the byte past
// 255 is read and adds nothing. A NUL byte is dropped and the text after it kept. Any
// other escape is kept as written.
func decodeBusyboxANSIC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		e := s[i]
		if k := strings.IndexByte("abfnrtv\"'\\", e); k >= 0 {
			b.WriteByte("\a\b\f\n\r\t\v\"'\\"[k])
			continue
		}
		n, digits := 0, 0
		switch {
		case e == 'x':
			for j := i + 1; j < len(s) && digits < 2 && isHex(s[j]); j++ {
				v, _ := strconv.ParseUint(s[j:j+1], 16, 8)
				n = n*16 + int(v)
				digits++
			}
			if digits == 0 {
				b.WriteString(`\x`)
				continue
			}
			i += digits
		case e >= '0' && e <= '7':
			for j := i; j < len(s) && digits < 3 && s[j] >= '0' && s[j] <= '7'; j++ {
				if r := n*8 + int(s[j]-'0'); r <= 0xff {
					n = r
				}
				digits++
			}
			i += digits - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
			continue
		}
		if n != 0 {
			b.WriteByte(byte(n))
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
