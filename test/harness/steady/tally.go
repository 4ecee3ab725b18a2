package steady

import (
	"math"
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
	// P50, P99 and Max are the latencies (Took) of the counted results,
	// failed ones included: figures for the log, not goals.
	P50, P99, Max time.Duration
	// Retries are the requests that a keep-alive client sent again on a
	// new connection after a reused one was closed before any response
	// byte, as Go's transport and browsers do: each counts as its outcome
	// on the new connection.
	Retries int
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
		took       []time.Duration
	)
	for _, r := range rs {
		counts, failed := judge(r)
		if !counts {
			continue
		}
		t.Requests++
		t.Retries += r.Retries
		took = append(took, r.Took)
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
	slices.Sort(took)
	t.P50, t.P99 = quantile(took, 0.50), quantile(took, 0.99)
	if len(took) > 0 {
		t.Max = took[len(took)-1]
	}
	return t
}

// quantile is the q-quantile of sorted by the nearest-rank method: the
// smallest value that at least q of them do not exceed.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// Answered reports whether r is a DNS result whose only A record is want.
func Answered(r Result, want string) bool {
	return r.Kind == KindDNS && r.Fail == "" && len(r.Answers) == 1 && r.Answers[0] == want
}
