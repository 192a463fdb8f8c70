package approval_test

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/approval"
)

func ExampleGate_Decide() {
	cfg := approval.DefaultConfig() // manual mode
	gate, err := approval.NewGate(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cmd := range []string{"ls -la", "make test", "dd if=/dev/zero of=/dev/sda"} {
		d, err := gate.Decide(context.Background(), approval.Request{CallID: "c1", SessionID: "s1", Command: cmd})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(d.Allow, d.Code, d.DecidedBy)
	}
	// Output:
	// true safe_command risk:safe
	// false approval_required mode:manual
	// false hard_deny hard_deny:device_write
}
