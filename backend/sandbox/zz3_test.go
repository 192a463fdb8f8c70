//go:build linux

package sandbox

import (
	"testing"

	"golang.org/x/sys/unix"
)

var unixClose = unix.Close

func BenchmarkZZPlan(b *testing.B) {
	p := Policy{WriteRoots: []string{b.TempDir()}}
	p.SystemRead = append(append([]string(nil), DefaultSystemRead...), toolchainDirs()...)
	p.Home = "/root"
	for i := 0; i < b.N; i++ {
		plan(p, osView{})
	}
}
func BenchmarkZZRuleset(b *testing.B) {
	p := Policy{WriteRoots: []string{b.TempDir()}}
	p.SystemRead = append(append([]string(nil), DefaultSystemRead...), toolchainDirs()...)
	p.Home = "/root"
	l := plan(p, osView{})
	for i := 0; i < b.N; i++ {
		fd, _ := buildRuleset(l.Grants, p.Network)
		closeFD(fd)
	}
}
func closeFD(fd int) { _ = unixClose(fd) }
