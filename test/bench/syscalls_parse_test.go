package bench

import (
	"maps"
	"testing"
)

// TestParsePerfStatCountsCallsByNameAndEAGAINReadsApart reads perf stat -x,
// output: sys_enter counts by call name (zero counts left out), the two
// filtered exit tracepoints summed as EAGAIN reads, and a count perf could
// not take is an error rather than zero calls.
func TestParsePerfStatCountsCallsByNameAndEAGAINReadsApart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		byName  map[string]float64
		eagain  float64
		wantErr bool
	}{
		{
			name: "calls and EAGAIN reads",
			in: "# started on Mon Dec  7 13:00:00 2026\n\n" +
				"400012,,syscalls:sys_enter_recvfrom,2411848354,100.00,,\n" +
				"400000,,syscalls:sys_enter_sendto,2411848354,100.00,,\n" +
				"0,,syscalls:sys_enter_read,2411848354,100.00,,\n" +
				"79000,,syscalls:sys_enter_epoll_pwait,2411848354,100.00,,\n" +
				"3,,syscalls:sys_exit_read,2411848354,100.00,,\n" +
				"12,,syscalls:sys_exit_recvfrom,2411848354,100.00,,\n",
			byName: map[string]float64{"recvfrom": 400012, "sendto": 400000, "epoll_pwait": 79000},
			eagain: 15,
		},
		{
			name:    "a count perf could not take",
			in:      "<not counted>,,syscalls:sys_enter_sendto,0,0.00,,\n",
			wantErr: true,
		},
		{
			name:    "no system call at all",
			in:      "0,,syscalls:sys_enter_sendto,2411848354,100.00,,\n",
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePerfStat([]byte(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.byName, tc.byName) || got.eagainRead != tc.eagain {
				t.Fatalf("got %v and %v EAGAIN reads, want %v and %v", got.byName, got.eagainRead, tc.byName, tc.eagain)
			}
		})
	}
}

// TestMedianRunIsTheIndexOfTheMiddleValue: with an even count it is the
// lower of the two middle values, so the split by name always belongs to
// one real run.
func TestMedianRunIsTheIndexOfTheMiddleValue(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want int
	}{
		{[]float64{4.5}, 0},
		{[]float64{4.5, 4.4, 4.2}, 1},
		{[]float64{4.2, 4.6, 4.4, 4.5}, 2},
	} {
		if got := medianRun(tc.xs); got != tc.want {
			t.Errorf("medianRun(%v) = %d, want %d", tc.xs, got, tc.want)
		}
	}
}
