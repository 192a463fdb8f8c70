package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/jobs"
)

// A job started with Stdin waits for its input and answers it; one started without reads
// end of file, and input to it is refused with ErrNoStdin.
func TestInputAnswersAnInteractiveProgram(t *testing.T) {
	t.Parallel()
	env, _ := newEnv(t)
	m := jobs.NewManager(jobs.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	j, err := m.Start(jobs.Spec{SessionID: "s1", CallID: "c1", Env: env, Stdin: true,
		Request: backend.Request{Command: `echo ready; read x; echo got-$x`}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Input(ctx, []byte("input-marker-7\n"), false); err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	text, in := j.Read(0)
	if text != "ready\ngot-input-marker-7\n" || in.State != jobs.Exited {
		t.Fatalf("output %q, state %+v", text, in)
	}
	if err := j.Input(ctx, []byte("late\n"), false); !errors.Is(err, jobs.ErrNoStdin) {
		t.Fatalf("input after the end: %v, want ErrNoStdin", err)
	}

	k, err := m.Start(jobs.Spec{SessionID: "s1", CallID: "c2", Env: env,
		Request: backend.Request{Command: `read x; echo "eof-$?"`}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Input(ctx, []byte("x\n"), false); !errors.Is(err, jobs.ErrNoStdin) {
		t.Fatalf("input to a job without stdin: %v, want ErrNoStdin", err)
	}
	_ = k.Wait(ctx)
	if text, _ := k.Read(0); strings.TrimSpace(text) != "eof-1" {
		t.Fatalf("a job without stdin read %q, want end of file", text)
	}
}

// Reads by offset go back over what the cursor already read, leave the cursor where it
// was, and start later than asked when those bytes left the buffer.
func TestReadAtByOffset(t *testing.T) {
	t.Parallel()
	env, _ := newEnv(t)
	m := jobs.NewManager(jobs.Options{BufferBytes: 16})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	j, err := m.Start(jobs.Spec{SessionID: "s1", CallID: "c1", Env: env,
		Request: backend.Request{Command: `printf 0123456789; printf abcdefghij`}})
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Wait(context.Background())
	for _, tc := range []struct {
		name     string
		offset   int64
		max      int
		want     string
		wantFrom int64
	}{
		{"within the window", 10, 5, "abcde", 10},
		{"dropped bytes are skipped", 0, 100, "456789abcdefghij", 4},
		{"past the end", 99, 10, "", 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, at, _ := j.ReadAt(tc.offset, tc.max)
			if string(data) != tc.want || at != tc.wantFrom {
				t.Fatalf("ReadAt(%d, %d) = %q at %d, want %q at %d", tc.offset, tc.max, data, at, tc.want, tc.wantFrom)
			}
		})
	}
	text, in := j.Read(0)
	if text != "456789abcdefghij" || in.DroppedBytes != 4 || in.ReadBytes != 16 || in.UnreadBytes != 0 {
		t.Fatalf("cursor read %q, %+v", text, in)
	}
	if data, at, _ := j.ReadAt(12, 3); string(data) != "cde" || at != 12 {
		t.Fatalf("after the cursor read, ReadAt(12) = %q at %d", data, at)
	}
}
