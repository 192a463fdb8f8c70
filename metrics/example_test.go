package metrics_test

import (
	"fmt"

	"github.com/airlock-dev/airlock/metrics"
)

// A non-loopback listen address is refused unless it is explicitly allowed.
func ExampleConfig_Validate() {
	fmt.Println(metrics.Config{Listen: "127.0.0.1:9464"}.Validate())
	fmt.Println(metrics.Config{Listen: "0.0.0.0:9464"}.Validate() != nil)
	fmt.Println(metrics.Config{Listen: "0.0.0.0:9464", AllowNonLoopback: true}.Validate())
	// Output:
	// <nil>
	// true
	// <nil>
}
