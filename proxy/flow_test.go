package proxy

import "testing"

// TestBufCacheHandsTheLastBufferToTheNextRead: a loop passes the buffer a
// write has just given back to the next read, and keeps one spare at most;
// the others go back to the pool.
func TestBufCacheHandsTheLastBufferToTheNextRead(t *testing.T) {
	var c bufCache
	a, b := c.get(), c.get()
	if a == b {
		t.Fatal("two buffers taken at once are the same buffer")
	}
	if len(*a) != smallBuf {
		t.Fatalf("a buffer of %d bytes, want %d", len(*a), smallBuf)
	}
	c.put(a)
	c.put(b) // the cache holds a already: b goes to the pool
	if c.spare != a {
		t.Fatal("the spare is not the first buffer given back")
	}
	if got := c.get(); got != a {
		t.Fatal("the next read did not take the spare")
	}
	if c.spare != nil {
		t.Fatal("the spare was taken but is still held")
	}
}
