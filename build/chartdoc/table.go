package chartdoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Begin and End are the README lines between which the table is written.
const (
	Begin = "<!-- values table: written by `make manifests` from values.yaml; do not edit -->"
	End   = "<!-- end of values table -->"
)

// Table renders rows as a Markdown table: key, type, default, description.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Key, r.Type, cell(r.Default), cell(r.Description))
	}
	return b.String()
}

// cell escapes what would end a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Splice returns readme with the text between its Begin and End lines
// replaced by table.
func Splice(readme []byte, table string) ([]byte, error) {
	start := bytes.Index(readme, []byte(Begin+"\n"))
	if start < 0 {
		return nil, fmt.Errorf("README has no line %q", Begin)
	}
	body := start + len(Begin) + 1
	end := bytes.Index(readme[body:], []byte(End))
	if end < 0 {
		return nil, fmt.Errorf("README has no line %q after %q", End, Begin)
	}
	var out bytes.Buffer
	out.Write(readme[:body])
	out.WriteString(table)
	out.Write(readme[body+end:])
	return out.Bytes(), nil
}

// Render returns the chart's README.md with the values table written from
// its values.yaml.
func Render(chartDir string) ([]byte, error) {
	values, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	rows, err := Rows(values)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(chartDir, "values.yaml"), err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		return nil, err
	}
	out, err := Splice(readme, Table(rows))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(chartDir, "README.md"), err)
	}
	return out, nil
}

// Write renders the chart's README.md and writes it back when it changed.
func Write(chartDir string) (changed bool, err error) {
	path := filepath.Join(chartDir, "README.md")
	out, err := Render(chartDir)
	if err != nil {
		return false, err
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	if bytes.Equal(old, out) {
		return false, nil
	}
	return true, os.WriteFile(path, out, 0o644)
}
