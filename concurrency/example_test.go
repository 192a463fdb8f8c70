package concurrency_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/airlock-dev/airlock/concurrency"
)

// A model asks, in one turn, to write a file, read it back, list another directory and run a
// command that policy denied. The read waits for the write because their paths overlap; the
// listing runs beside the write; the denied call never runs.
func ExampleScheduler_Run() {
	s, err := concurrency.New(concurrency.Options{MaxWorkers: 4})
	if err != nil {
		fmt.Println(err)
		return
	}

	var mu sync.Mutex
	files := map[string]string{"/w/docs/README": "docs"}
	results := make([]string, 4)

	tasks := []concurrency.Task{
		{
			Scope: concurrency.Scope{Paths: []concurrency.PathAccess{{Path: "/w/notes.txt", Access: concurrency.Write}}},
			Run: func(context.Context) {
				mu.Lock()
				defer mu.Unlock()
				files["/w/notes.txt"] = "hello"
				results[0] = "wrote /w/notes.txt"
			},
		},
		{
			Scope: concurrency.Scope{Paths: []concurrency.PathAccess{{Path: "/w/notes.txt", Access: concurrency.Read}}},
			Run: func(context.Context) {
				mu.Lock()
				defer mu.Unlock()
				results[1] = "read /w/notes.txt: " + files["/w/notes.txt"]
			},
		},
		{
			Scope: concurrency.Scope{Paths: []concurrency.PathAccess{{Path: "/w/docs", Access: concurrency.Read}}},
			Run: func(context.Context) {
				mu.Lock()
				defer mu.Unlock()
				results[2] = "listed /w/docs"
			},
		},
		{Scope: concurrency.Scope{Skip: true}},
	}

	timings := s.Run(context.Background(), tasks)
	for i, tm := range timings {
		switch {
		case tm.Skipped:
			fmt.Printf("%d: skipped\n", i)
		case tm.Started:
			fmt.Printf("%d: %s\n", i, results[i])
		}
	}
	fmt.Println("read waited for write:", !timings[1].Start.Before(timings[0].End))
	// Output:
	// 0: wrote /w/notes.txt
	// 1: read /w/notes.txt: hello
	// 2: listed /w/docs
	// 3: skipped
	// read waited for write: true
}

// Conflicts is the rule the scheduler orders calls by.
func ExampleConflicts() {
	read := func(p string) concurrency.Scope {
		return concurrency.Scope{Paths: []concurrency.PathAccess{{Path: p, Access: concurrency.Read}}}
	}
	write := func(p string) concurrency.Scope {
		return concurrency.Scope{Paths: []concurrency.PathAccess{{Path: p, Access: concurrency.Write}}}
	}
	fmt.Println(concurrency.Conflicts(write("/w/a"), read("/w/a/x")))
	fmt.Println(concurrency.Conflicts(write("/w/a"), read("/w/ab")))
	fmt.Println(concurrency.Conflicts(read("/w/a"), read("/w/a")))
	fmt.Println(concurrency.Conflicts(concurrency.Scope{Exclusive: true}, read("/w/b")))
	// Output:
	// true
	// false
	// false
	// true
}
