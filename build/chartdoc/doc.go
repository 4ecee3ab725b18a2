// Package chartdoc writes the values table of a Helm chart's README from the
// chart's values.yaml, the way helm-docs does: one row per key with its
// type, its default and the description from the `# --` comment above it.
//
//	# -- Bound on one upstream dial, DNS included.
//	dialTimeout: 5s
//
// A description may run over several comment lines; comment lines above the
// `# --` line are section prose and are not part of it. `# -- (int) text`
// names the type where the default cannot (a null), and `# @default --
// text` replaces the default column. A mapping with its own `# --` comment
// is one row with its whole default; its children get rows only when they
// carry `# --` comments of their own. A key without a description is an
// error naming it, so a value cannot be added undocumented.
//
// `make manifests` writes the table into manifests/coredns-hairpin/README.md
// between [Begin] and [End]; test/manifests fails when it has drifted, and
// build/release rewrites it in the chart it packages, whose defaults name
// the pushed images.
package chartdoc
