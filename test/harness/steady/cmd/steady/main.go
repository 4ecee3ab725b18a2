// Command steady is the lifecycle tests' and the soak's steady client
// (package steady): steady.Start runs it under nsenter in a Pod's network
// namespace, with its configuration in the environment, and reads its
// results, one JSON line each, from its standard output.
package main

import (
	"os"

	"github.com/coredns-hairpin/hairpin/test/harness/steady"
)

func main() { os.Exit(steady.Main()) }
