// Command chartdoc writes the values table of a chart's README.md from its
// values.yaml (package chartdoc); `make manifests` runs it:
//
//	go run ./build/chartdoc/cmd/chartdoc -chart manifests/coredns-hairpin
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/coredns-hairpin/hairpin/build/chartdoc"
)

func main() {
	chart := flag.String("chart", "manifests/coredns-hairpin", "chart folder holding values.yaml and README.md")
	flag.Parse()
	changed, err := chartdoc.Write(*chart)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chartdoc:", err)
		os.Exit(1)
	}
	if changed {
		fmt.Fprintln(os.Stderr, "chartdoc: wrote the values table of", filepath.Join(*chart, "README.md"))
	}
}
