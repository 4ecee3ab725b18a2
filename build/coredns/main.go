// Command coredns is CoreDNS with every stock plugin plus hairpin, in the
// order of the top-level plugin.cfg. It loads the Corefile itself
// (activation.go) so that a Corefile without a hairpin directive gets one in
// every server block that holds kubernetes, on every load and reload
// (docs/architecture.md, "Activation"); -hairpin.activate=false turns that off.
package main

//go:generate go run ../gen -in ../../plugin.cfg -out zplugin.go

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
)

// version is the coredns-hairpin release, set with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		fmt.Fprintln(os.Stderr, "coredns-hairpin: plugin order from plugin.cfg:", err)
		os.Exit(1)
	}
	if err := corefileLoader.fromEnv(os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "coredns-hairpin:", err)
		os.Exit(2)
	}
	logMemoryLimit(setMemoryLimit(os.Getenv, os.ReadFile))
	caddy.AppVersion = fmt.Sprintf("%s (coredns-hairpin %s)", coremain.CoreVersion, version)
	if slices.Contains(os.Args[1:], "-plugins") || slices.Contains(os.Args[1:], "--plugins") {
		fmt.Print(describePlugins())
		return
	}
	coremain.Run()
}

// describePlugins lists plugins with their server type, as "dns.hairpin".
// CoreDNS 1.15 prints bare names; the qualified form is what operators and
// older docs grep for, and it says which server type a plugin belongs to.
func describePlugins() string {
	var b strings.Builder
	for _, name := range caddy.ListPlugins()["others"] {
		b.WriteString(name + "\n")
	}
	return b.String()
}
