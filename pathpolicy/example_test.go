package pathpolicy_test

import (
	"fmt"

	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/tool"
)

func ExampleDecide() {
	rules := pathpolicy.Rules{
		ReadRoots:  []pathpolicy.Root{{Path: "/work/app", Real: "/work/app"}},
		WriteRoots: []pathpolicy.Root{{Path: "/work/app", Real: "/work/app"}},
		DenyNames:  pathpolicy.DefaultDenyNames,
	}
	for _, raw := range []string{"src/main.go", "../app-copy/main.go", "config/.env"} {
		p, _ := pathpolicy.Normalize("/work/app", raw)
		o := pathpolicy.Decide(rules, pathpolicy.Target{Raw: raw, Path: p, Real: p, Access: tool.Read})
		fmt.Println(raw, o.Code)
	}
	// Output:
	// src/main.go allowed
	// ../app-copy/main.go outside_roots
	// config/.env forbidden_path
}
