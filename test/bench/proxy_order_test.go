package bench

import "testing"

// TestBalancedOrdersGiveEveryPathEveryPlaceAndPredecessorEqually checks the
// proxy phase's design: in every order each path runs once, every path takes
// every place equally often, and every ordered pair (a right before b) occurs
// equally often.
func TestBalancedOrdersGiveEveryPathEveryPlaceAndPredecessorEqually(t *testing.T) {
	for _, tc := range []struct {
		paths, orders int
	}{
		{paths: 2, orders: 2},
		{paths: 3, orders: 6},
		{paths: 4, orders: 4},
		{paths: 5, orders: 10},
		{paths: 6, orders: 6},
	} {
		orders := balancedOrders(tc.paths)
		if len(orders) != tc.orders {
			t.Errorf("%d paths: %d orders, want %d", tc.paths, len(orders), tc.orders)
			continue
		}
		place := map[[2]int]int{} // {path, place}
		follows := map[[2]int]int{}
		for _, o := range orders {
			seen := map[int]bool{}
			for k, p := range o {
				if p < 0 || p >= tc.paths || seen[p] {
					t.Fatalf("%d paths: order %v is not a permutation", tc.paths, o)
				}
				seen[p] = true
				place[[2]int{p, k}]++
				if k > 0 {
					follows[[2]int{o[k-1], p}]++
				}
			}
		}
		// n paths have n places and n-1 successors each, so both counts
		// are orders/n.
		want := tc.orders / tc.paths
		for p := range tc.paths {
			for k := range tc.paths {
				if got := place[[2]int{p, k}]; got != want {
					t.Errorf("%d paths: path %d in place %d %d times, want %d", tc.paths, p, k, got, want)
				}
			}
		}
		for a := range tc.paths {
			for b := range tc.paths {
				if a == b {
					continue
				}
				if got := follows[[2]int{a, b}]; got != want {
					t.Errorf("%d paths: %d right before %d %d times, want %d", tc.paths, a, b, got, want)
				}
			}
		}
	}
}
