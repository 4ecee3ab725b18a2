package kubectlhairpin

import "slices"

// Status is the outcome of one check.
type Status string

// The statuses, from best to worst.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one line of the report. Its fields are the JSON contract of
// `-o json`.
type Check struct {
	ID      string   `json:"id"`
	Group   string   `json:"group"`
	Status  Status   `json:"status"`
	Message string   `json:"message"`
	Hint    string   `json:"hint"`
	Objects []string `json:"objects"` // "kind/namespace/name", or "kind/name" for cluster-scoped objects
}

// Report is every check of one run, in group order.
type Report struct {
	Checks []Check `json:"checks"`
}

// Failed reports whether any check failed; warnings do not fail.
func (r Report) Failed() bool {
	return slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Status == Fail })
}

// Count returns how many checks have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}
