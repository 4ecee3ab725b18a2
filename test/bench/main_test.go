package bench

import (
	"os"
	"testing"

	"github.com/coredns-hairpin/hairpin/test/harness/steady"
)

func TestMain(m *testing.M) {
	// This binary is also the soak's steady client.
	steady.RunIfChild()
	os.Exit(m.Run())
}
