package chartdoc

import (
	"strings"
	"testing"
)

func TestRowsReadDescriptionsTypesAndDefaults(t *testing.T) {
	tests := []struct {
		name   string
		values string
		want   []Row
	}{
		{
			name:   "scalar with a one-line description",
			values: "# -- The cluster's DNS domain.\nclusterDomain: cluster.local\n",
			want:   []Row{{Key: "clusterDomain", Type: "string", Default: "`\"cluster.local\"`", Description: "The cluster's DNS domain."}},
		},
		{
			name:   "description over several lines, section prose above it left out",
			values: "# Section prose.\n# More prose.\n# -- First line\n# second line.\nreplicas: 2\n",
			want:   []Row{{Key: "replicas", Type: "int", Default: "`2`", Description: "First line second line."}},
		},
		{
			name:   "nested keys are joined by dots",
			values: "proxy:\n  image:\n    # -- The image.\n    repository: r\n    # -- Tag.\n    tag: \"\"\n",
			want: []Row{
				{Key: "proxy.image.repository", Type: "string", Default: "`\"r\"`", Description: "The image."},
				{Key: "proxy.image.tag", Type: "string", Default: "`\"\"`", Description: "Tag."},
			},
		},
		{
			name:   "a type in parentheses names a null's type",
			values: "# -- (int) Cap; null: derived.\nmaxConns: null\n",
			want:   []Row{{Key: "maxConns", Type: "int", Default: "`null`", Description: "Cap; null: derived."}},
		},
		{
			name:   "a documented mapping is one row, undocumented children inside it",
			values: "# -- Requests and limits.\nresources:\n  requests:\n    cpu: 50m\n",
			want:   []Row{{Key: "resources", Type: "object", Default: "`{\"requests\":{\"cpu\":\"50m\"}}`", Description: "Requests and limits."}},
		},
		{
			name:   "@default replaces the default, documented children still get rows",
			values: "# -- One entry per controller.\n# @default -- the keys below\ntargets:\n  a:\n    # -- Zones.\n    zones: []\n    other: 1\n",
			want: []Row{
				{Key: "targets", Type: "object", Default: "the keys below", Description: "One entry per controller."},
				{Key: "targets.a.zones", Type: "list", Default: "`[]`", Description: "Zones."},
			},
		},
		{
			name:   "a pipe in a default or description is kept",
			values: "# -- a | b\nx: \"c|d\"\n",
			want:   []Row{{Key: "x", Type: "string", Default: "`\"c|d\"`", Description: "a | b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Rows([]byte(tt.values))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("rows %+v; want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("row %d: %+v; want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRowsRefuseAnUndocumentedKey(t *testing.T) {
	tests := []struct {
		name, values, want string
	}{
		{"no comment", "proxy:\n  # -- ok\n  a: 1\n  b: 2\n", "proxy.b (line 4) has no `# --` description"},
		{"prose only", "# Just prose.\nx: 1\n", "x (line 2) has no `# --` description"},
		{"empty description", "# --\nx: 1\n", "x (line 2): the `# --` description is empty"},
		{"description cut off by a blank line", "# -- the description\n\n# prose\nx: 1\n", "x (line 4) has no `# --` description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Rows([]byte(tt.values))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTableEscapesPipes(t *testing.T) {
	got := Table([]Row{{Key: "x", Type: "string", Default: "`\"c|d\"`", Description: "a | b"}})
	want := "| Key | Type | Default | Description |\n|---|---|---|---|\n| `x` | string | `\"c\\|d\"` | a \\| b |\n"
	if got != want {
		t.Errorf("table\n%s\nwant\n%s", got, want)
	}
}

func TestSpliceReplacesOnlyTheTable(t *testing.T) {
	readme := "# Chart\n\nintro\n" + Begin + "\nold table\n" + End + "\nafter\n"
	got, err := Splice([]byte(readme), "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Chart\n\nintro\n" + Begin + "\nnew table\n" + End + "\nafter\n"
	if string(got) != want {
		t.Errorf("spliced\n%s\nwant\n%s", got, want)
	}
	if _, err := Splice([]byte("no markers\n"), "t"); err == nil || !strings.Contains(err.Error(), "README has no line") {
		t.Errorf("error %v; want one naming the missing marker", err)
	}
}
