package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/airlock-dev/airlock/receipt/receipttest"
)

// TestResultClone shows that the copy a post-hook gets shares nothing with the result, with
// every field of a result set: a field added to Result or Metadata that clone does not copy
// deeply fails here.
func TestResultClone(t *testing.T) {
	r := receipttest.Filled[Result](t)
	data, err := json.Marshal(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	receipttest.NoSharing(t, &r, new(r.clone(data)))
}
