package steady

import (
	"slices"
	"time"
)

// Judge says whether r counts for an operation, and whether it failed: what
// the right answer is depends on the moment of the test.
type Judge func(r Result) (counts, failed bool)

// Tally is what the client saw during one operation.
type Tally struct {
	Requests, Failed int
	// Window is the longest run of failures: from the start of the first
	// failed operation to the end of the last, with no success between.
	Window time.Duration
	// Samples are up to a few failed results, for the log.
	Samples []Result
}

// maxSamples is how many failures a Tally keeps.
const maxSamples = 5

// Count tallies rs by judge.
func Count(rs []Result, judge Judge) Tally {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b Result) int { return a.At.Compare(b.At) })
	var (
		t          Tally
		start, end time.Time
		inRun      bool
	)
	for _, r := range rs {
		counts, failed := judge(r)
		if !counts {
			continue
		}
		t.Requests++
		if !failed {
			inRun = false
			continue
		}
		t.Failed++
		if len(t.Samples) < maxSamples {
			t.Samples = append(t.Samples, r)
		}
		if !inRun {
			inRun, start, end = true, r.At, r.At
		}
		if e := r.At.Add(r.Took); e.After(end) {
			end = e
		}
		if w := end.Sub(start); w > t.Window {
			t.Window = w
		}
	}
	return t
}

// Answered reports whether r is a DNS result whose only A record is want.
func Answered(r Result, want string) bool {
	return r.Kind == KindDNS && r.Fail == "" && len(r.Answers) == 1 && r.Answers[0] == want
}
