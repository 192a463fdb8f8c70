package httpapi_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

type event struct {
	name string
	data json.RawMessage
}

func TestCallsStreamAsEvents(t *testing.T) {
	f := newFixture(t, "")
	id := f.session(t, aliceToken).ID
	req, err := http.NewRequest("POST", f.url+"/v1/sessions/"+id+"/calls",
		strings.NewReader(`{"name":"terminal","call_id":"s1","arguments":{"command":"echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three"}}`))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var evs []event
	sc := bufio.NewScanner(resp.Body)
	var cur event
	for sc.Scan() {
		ln := sc.Text()
		switch {
		case strings.HasPrefix(ln, "event: "):
			cur.name = strings.TrimPrefix(ln, "event: ")
		case strings.HasPrefix(ln, "data: "):
			cur.data = json.RawMessage(strings.TrimPrefix(ln, "data: "))
		case ln == "" && cur.name != "":
			evs = append(evs, cur)
			cur = event{}
		}
	}
	var names []string
	var out []httpapi.OutputEvent
	for _, e := range evs {
		names = append(names, e.name)
		if e.name == "output" {
			var o httpapi.OutputEvent
			must(t, json.Unmarshal(e.data, &o))
			out = append(out, o)
		}
	}
	seq := strings.Join(names, " ")
	if !strings.HasPrefix(seq, "queued output") || !strings.HasSuffix(seq, "output result receipt end") {
		t.Fatalf("events in order %q", seq)
	}
	want := []httpapi.OutputEvent{{"s1", 0, "one\n"}, {"s1", 4, "two\n"}, {"s1", 8, "three\n"}}
	if len(out) != len(want) {
		t.Fatalf("output events %+v, want %+v", out, want)
	}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("output %d = %+v, want %+v", i, out[i], want[i])
		}
	}
	var res pipeline.Result
	var rec receipt.Receipt
	must(t, json.Unmarshal(evs[len(evs)-3].data, &res))
	must(t, json.Unmarshal(evs[len(evs)-2].data, &rec))
	if res.Status != pipeline.StatusOK || res.CallID != "s1" || rec.CallID != "s1" || rec.Outcome != receipt.Executed || rec.Client.Caller != "alice" {
		t.Errorf("result %+v receipt %+v", res, rec)
	}
}
