package hairpin

import "sync"

// interner hands out one copy of each distinct string, so that the class
// names of 100,000 Ingresses (a few dozen distinct values, decoded into
// 100,000 strings) are stored once. It keeps at most limit strings: a flood
// of distinct values is stored as it comes, not held here forever.
type interner struct {
	mu    sync.Mutex
	m     map[string]string
	limit int
}

func newInterner(limit int) *interner { return &interner{m: map[string]string{}, limit: limit} }

func (in *interner) intern(s string) string {
	if s == "" {
		return ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[s]; ok {
		return v
	}
	if len(in.m) < in.limit {
		in.m[s] = s
	}
	return s
}
