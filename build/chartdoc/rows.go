package chartdoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Row is one documented key of values.yaml.
type Row struct {
	// Key is the key's path, its names joined by dots
	// ("proxy.image.repository").
	Key string
	// Type is "string", "int", "float", "bool", "list", "object" or what
	// the comment's "(type)" says.
	Type string
	// Default is the value in values.yaml as compact JSON, or the comment's
	// "@default --" text.
	Default string
	// Description is the `# --` comment, its lines joined by spaces.
	Description string
}

// doc is what the comment above a key says.
type doc struct {
	found       bool   // there is a `# --` line
	typ         string // from "(type)"
	description string
	def         string // from "@default --"
}

var (
	docLine     = regexp.MustCompile(`^#\s*--\s?(.*)$`)
	typePrefix  = regexp.MustCompile(`^\(([a-z]+)\)\s*(.*)$`)
	defaultLine = regexp.MustCompile(`^#\s*@default\s*--\s?(.*)$`)
)

// parseDoc reads the `# --` description out of a key's head comment.
func parseDoc(comment string) doc {
	var d doc
	var desc []string
	for _, line := range strings.Split(comment, "\n") {
		line = strings.TrimSpace(line)
		if m := defaultLine.FindStringSubmatch(line); m != nil {
			d.def = strings.TrimSpace(m[1])
			continue
		}
		if m := docLine.FindStringSubmatch(line); m != nil {
			// A second `# --` starts the description over: only the one
			// nearest the key documents it.
			d.found, desc = true, nil
			text := strings.TrimSpace(m[1])
			if t := typePrefix.FindStringSubmatch(text); t != nil {
				d.typ, text = t[1], t[2]
			}
			if text != "" {
				desc = append(desc, text)
			}
			continue
		}
		if !d.found {
			continue
		}
		if line == "" {
			// A blank line ends the comment block that documents the key.
			d.found, desc, d.typ = false, nil, ""
			continue
		}
		if text := strings.TrimSpace(strings.TrimPrefix(line, "#")); text != "" {
			desc = append(desc, text)
		}
	}
	d.description = strings.Join(desc, " ")
	return d
}

// Rows returns the documented keys of a values.yaml, in file order.
func Rows(values []byte) ([]Row, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(values, &root); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values: the top level is not a mapping")
	}
	var rows []Row
	if err := walk(top, "", false, &rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// walk adds the rows of mapping m under prefix. Below a documented
// mapping (covered), keys without a description are part of its row.
func walk(m *yaml.Node, prefix string, covered bool, rows *[]Row) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := k.Value
		if prefix != "" {
			key = prefix + "." + k.Value
		}
		d := parseDoc(k.HeadComment)
		if !d.found {
			switch {
			case v.Kind == yaml.MappingNode && len(v.Content) > 0:
				if err := walk(v, key, covered, rows); err != nil {
					return err
				}
			case !covered:
				return fmt.Errorf("values: %s (line %d) has no `# --` description", key, k.Line)
			}
			continue
		}
		row, err := rowOf(key, v, d)
		if err != nil {
			return err
		}
		*rows = append(*rows, row)
		if v.Kind == yaml.MappingNode {
			if err := walk(v, key, true, rows); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowOf builds the row of key, whose value node is v.
func rowOf(key string, v *yaml.Node, d doc) (Row, error) {
	if d.description == "" {
		return Row{}, fmt.Errorf("values: %s (line %d): the `# --` description is empty", key, v.Line)
	}
	r := Row{Key: key, Type: d.typ, Default: d.def, Description: d.description}
	if r.Type == "" {
		r.Type = typeOf(v)
	}
	if r.Default == "" {
		var val any
		if err := v.Decode(&val); err != nil {
			return Row{}, fmt.Errorf("values: %s: %w", key, err)
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(val); err != nil {
			return Row{}, fmt.Errorf("values: %s: %w", key, err)
		}
		r.Default = "`" + strings.TrimSpace(b.String()) + "`"
	}
	return r, nil
}

// typeOf names the type of a value node.
func typeOf(v *yaml.Node) string {
	switch v.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "object"
	}
	switch v.Tag {
	case "!!str":
		return "string"
	case "!!int":
		return "int"
	case "!!float":
		return "float"
	case "!!bool":
		return "bool"
	}
	return "null"
}
