package differential

import "testing"

func optionSeeds(t testing.TB) []input { return nil }
