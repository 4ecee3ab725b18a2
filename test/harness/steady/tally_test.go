package steady

import (
	"testing"
	"time"
)

func TestCountTalliesWhatTheJudgeCountsAndTheLongestRunOfFailures(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int, fail string, took int) Result {
		return Result{At: t0.Add(time.Duration(ms) * time.Millisecond), Kind: KindHTTP, Fail: fail, Took: time.Duration(took) * time.Millisecond}
	}
	rs := []Result{
		at(40, FailRefused, 5), // out of order: Count sorts by start
		at(0, "", 1),
		at(20, FailRefused, 5),
		at(60, "", 1),
		at(80, FailReset, 300), // a run of one, long
		at(100, "", 1),
		{At: t0.Add(120 * time.Millisecond), Kind: KindDNS, Fail: FailTimeout}, // not counted
	}
	got := Count(rs, func(r Result) (bool, bool) { return r.Kind == KindHTTP, r.Fail != "" })
	if got.Requests != 6 || got.Failed != 3 {
		t.Fatalf("requests=%d failed=%d, want 6 and 3", got.Requests, got.Failed)
	}
	if got.Window != 300*time.Millisecond {
		t.Fatalf("window %s, want the 300 ms of the reset (the two refusals span 25 ms)", got.Window)
	}
	if len(got.Samples) != 3 {
		t.Fatalf("%d samples, want 3", len(got.Samples))
	}
}

func TestCountGivesTheLatencyOfWhatItCounts(t *testing.T) {
	for _, tc := range []struct {
		name           string
		took           []int // ms, each an HTTP result; a DNS result of 900 ms is never counted
		p50, p99, most int
	}{
		{"none", nil, 0, 0, 0},
		{"one", []int{7}, 7, 7, 7},
		{"nearest rank", []int{4, 1, 3, 2}, 2, 4, 4},
		{"a slow tail shows in p99 and max only", append(make([]int, 99), 1000), 0, 0, 1000},
		{"two slow in a hundred", append(make([]int, 98), 800, 1000), 0, 800, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := []Result{{Kind: KindDNS, Took: 900 * time.Millisecond}}
			for _, ms := range tc.took {
				rs = append(rs, Result{Kind: KindHTTP, Took: time.Duration(ms) * time.Millisecond})
			}
			got := Count(rs, func(r Result) (bool, bool) { return r.Kind == KindHTTP, false })
			ms := func(d time.Duration) int { return int(d / time.Millisecond) }
			if ms(got.P50) != tc.p50 || ms(got.P99) != tc.p99 || ms(got.Max) != tc.most {
				t.Errorf("p50=%s p99=%s max=%s, want %dms %dms %dms", got.P50, got.P99, got.Max, tc.p50, tc.p99, tc.most)
			}
		})
	}
}

func TestCountSumsTheRetriesOfWhatItCounts(t *testing.T) {
	rs := []Result{{Kind: KindHTTP, Retries: 1}, {Kind: KindHTTP}, {Kind: KindHTTP, Retries: 2}, {Kind: KindDNS, Retries: 5}}
	got := Count(rs, func(r Result) (bool, bool) { return r.Kind == KindHTTP, false })
	if got.Retries != 3 {
		t.Errorf("retries %d, want 3 (the DNS result is not counted)", got.Retries)
	}
}

func TestAnsweredWantsExactlyTheAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Result
		want bool
	}{
		{"the address alone", Result{Kind: KindDNS, Answers: []string{"10.0.0.1"}}, true},
		{"another address", Result{Kind: KindDNS, Answers: []string{"203.0.113.10"}}, false},
		{"the address among others", Result{Kind: KindDNS, Answers: []string{"10.0.0.1", "10.0.0.2"}}, false},
		{"a failed query", Result{Kind: KindDNS, Fail: FailTimeout}, false},
		{"not DNS", Result{Kind: KindHTTP, Answers: []string{"10.0.0.1"}}, false},
	} {
		if got := Answered(tc.r, "10.0.0.1"); got != tc.want {
			t.Errorf("%s: Answered = %v, want %v", tc.name, got, tc.want)
		}
	}
}
