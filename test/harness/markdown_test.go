package harness

import (
	"slices"
	"testing"
)

// TestCodeBlocksReadWhatThePageSaysABlockPrints: a "prints `X`" in the
// prose before a block, wrapped over lines or not, is the block's stated
// output; "until it prints" has the command repeated; a heading or an
// earlier block ends the prose that counts.
func TestCodeBlocksReadWhatThePageSaysABlockPrints(t *testing.T) {
	page := "## One\n\nThe command must print\n`gone`:\n\n```sh\necho gone\n```\n\n" +
		"Repeat it until it prints `reloaded\n  now`.\n\n<!-- docs-test: on shape step -->\n```sh\necho reloaded\n```\n\n" +
		"It prints `stale`.\n\n## Two\n\n```sh\necho two\n```\n"
	blocks := CodeBlocks(page)
	if len(blocks) != 3 {
		t.Fatalf("%d blocks, want 3", len(blocks))
	}
	for i, want := range []struct {
		prints []string
		until  bool
	}{{[]string{"gone"}, false}, {[]string{"reloaded now"}, true}, {nil, false}} {
		if b := blocks[i]; !slices.Equal(b.Prints, want.prints) || b.Until != want.until {
			t.Errorf("block %d (%q): prints %q until %v; want %q until %v", i, b.Body, b.Prints, b.Until, want.prints, want.until)
		}
	}
	if blocks[1].Marker != "on shape step" {
		t.Errorf("marker %q", blocks[1].Marker)
	}
}
