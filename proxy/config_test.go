package proxy

import (
	"strings"
	"testing"
)

func TestNewRejectsInvalidConfig(t *testing.T) {
	c := DefaultConfig()
	c.Routes = []Route{{Listen: ":8080", Upstream: "a:80", HeaderPort: 70000}}
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "header-port 70000 out of range 1-65535") {
		t.Fatalf("New error = %v", err)
	}
	c.Routes = []Route{{Listen: ":8080", Upstream: "a:80"}}
	c.ProxyProtocol = 0
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "unknown version 0") {
		t.Fatalf("New error = %v", err)
	}
}
