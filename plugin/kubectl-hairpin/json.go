package kubectlhairpin

import (
	"encoding/json"
	"io"
)

// WriteJSON prints the report as {"checks":[...]}, indented, with every
// field present (empty hint "", no objects []).
func WriteJSON(w io.Writer, r Report) error {
	r.Checks = append([]Check{}, r.Checks...) // the caller's report stays as it was
	for i := range r.Checks {
		if r.Checks[i].Objects == nil {
			r.Checks[i].Objects = []string{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
