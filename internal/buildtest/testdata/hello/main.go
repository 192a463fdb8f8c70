// Command hello is the smallest program a buildtest.Program builds in the package's tests.
package main

func main() { println("hello") }
