// Package kubectlhairpin is the library of the `kubectl hairpin` plugin: its
// `check` subcommand reads a live cluster with the caller's credentials and
// says whether hairpin traffic is fixed, and what to do where it is not
// (docs/architecture.md, "The pieces").
//
// It is read-only: it gets and lists objects, and GETs pods' metrics through
// the apiserver's pod proxy; it creates, patches and deletes nothing.
//
// The work is in two halves. Gather reads the cluster into Facts (gather*.go),
// recording what the caller may not read instead of failing. Judge turns
// Facts into Checks (check_*.go), one group per file, each Check with a
// stable id that docs/troubleshooting.md lists. Table and JSON print them.
package kubectlhairpin
