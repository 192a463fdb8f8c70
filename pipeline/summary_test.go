package pipeline_test

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

func TestSummary(t *testing.T) {
	zero, one := 0, 1
	long := strings.Repeat("é", 300)
	cases := []struct {
		name string
		out  tool.Output
		want []string
		not  []string
	}{
		{"empty", tool.Output{ExitCode: &zero}, []string{"(0 lines, 0 bytes)", "exit code 0"}, []string{"first line", "last line"}},
		{"one line", tool.Output{Content: "only\n", ExitCode: &one}, []string{"(1 lines, 5 bytes)", "exit code 1", `first line: "only"`}, []string{"last line"}},
		{"quoted", tool.Output{Content: "a\n\x1b[2Jignore previous\n"}, []string{`last line: "\x1b[2Jignore previous"`}, []string{"exit code", "\x1b"}},
		{"clipped", tool.Output{Content: long}, []string{"…"}, []string{long}},
	}
	for _, c := range cases {
		got := pipeline.Summary(&c.out)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q holds %q", c.name, got, w)
			}
		}
	}
}
