package mcpserver

import "testing"

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	got := unifiedDiff("f.txt", "a\nb\nc\nd\ne\nf\n", "a\nb\nc\nX\ne\nf\n")
	want := "--- f.txt\n+++ f.txt\n@@ -1,6 +1,6 @@\n a\n b\n c\n-d\n+X\n e\n f\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := unifiedDiff("new.txt", "", "hello\n"); got != "--- new.txt\n+++ new.txt\n@@ -1,0 +1,1 @@\n+hello\n" {
		t.Fatalf("new file diff %q", got)
	}
	if unifiedDiff("same", "x\n", "x\n") != "" {
		t.Fatal("diff of equal texts")
	}
}
