package main

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// setScalars returns the YAML text src with the scalars at the given
// dotted paths replaced by the given strings, written as double-quoted
// scalars. Only those values change: every comment and every other line
// stays as written, so that the values.yaml of a released chart reads like
// the source one (and its values table is generated from it the same way).
func setScalars(src []byte, values map[string]string) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, err
	}
	lines := strings.Split(string(src), "\n")
	for path, val := range values {
		n, err := lookup(&root, path)
		if err != nil {
			return nil, err
		}
		if n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s (line %d) is not a scalar", path, n.Line)
		}
		line := lines[n.Line-1]
		start := n.Column - 1
		end, err := scalarEnd(line, start, n)
		if err != nil {
			return nil, fmt.Errorf("%s (line %d): %w", path, n.Line, err)
		}
		lines[n.Line-1] = line[:start] + strconv.Quote(val) + line[end:]
	}
	out := []byte(strings.Join(lines, "\n"))
	// The edit is checked by reading it back.
	var check yaml.Node
	if err := yaml.Unmarshal(out, &check); err != nil {
		return nil, fmt.Errorf("edited YAML does not parse: %w", err)
	}
	for path, val := range values {
		n, err := lookup(&check, path)
		if err != nil {
			return nil, err
		}
		if n.Value != val {
			return nil, fmt.Errorf("%s reads back as %q, not %q", path, n.Value, val)
		}
	}
	return out, nil
}

// scalarEnd returns where the scalar n that starts at line[start] ends:
// after its closing quote, or after its plain text.
func scalarEnd(line string, start int, n *yaml.Node) (int, error) {
	if start >= len(line) {
		return 0, fmt.Errorf("no value on the line")
	}
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		q := line[start]
		for i := start + 1; i < len(line); i++ {
			if line[i] == '\\' && q == '"' {
				i++
				continue
			}
			if line[i] == q {
				if q == '\'' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return i + 1, nil
			}
		}
		return 0, fmt.Errorf("the quoted value does not end on its line")
	case 0:
		if !strings.HasPrefix(line[start:], n.Value) {
			return 0, fmt.Errorf("the plain value %q is not on its line", n.Value)
		}
		return start + len(n.Value), nil
	}
	return 0, fmt.Errorf("a block or flow value cannot be replaced in place")
}

// lookup returns the node at a dotted path of mapping keys.
func lookup(root *yaml.Node, path string) (*yaml.Node, error) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, key := range strings.Split(path, ".") {
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: %q is not inside a mapping", path, key)
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
				break
			}
		}
		if next == nil {
			return nil, fmt.Errorf("%s: no key %q", path, key)
		}
		n = next
	}
	return n, nil
}
