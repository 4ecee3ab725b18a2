// Command gen turns plugin.cfg into the blank imports and directive list of
// the coredns-hairpin CoreDNS main package. It is run by go generate.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/coredns-hairpin/hairpin/build/plugincfg"
)

func main() {
	in := flag.String("in", "plugin.cfg", "plugin.cfg to read")
	out := flag.String("out", "zplugin.go", "Go file to write")
	pkg := flag.String("package", "main", "package name of the generated file")
	flag.Parse()

	if err := run(*in, *out, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out, pkg string) error {
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("opening %s: %w", in, err)
	}
	defer f.Close()
	src, err := plugincfg.Generate(pkg, f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}
