package kubectlhairpin

import (
	"fmt"
	"io"
	"strings"
)

// The marks of each status, as `linkerd check` prints them.
var marks = map[Status]string{OK: "√", Warn: "‼", Fail: "×"}

// WriteTable prints the report grouped, one line per check with its mark,
// an indented hint under every check that has one, and a summary line.
func WriteTable(w io.Writer, r Report) error {
	var b strings.Builder
	for _, group := range groupOrder {
		first := true
		for _, c := range r.Checks {
			if c.Group != group {
				continue
			}
			if first {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "%s\n%s\n", group, strings.Repeat("-", len(group)))
				first = false
			}
			fmt.Fprintf(&b, "%s %s\n", marks[c.Status], c.Message)
			if c.Hint != "" {
				fmt.Fprintf(&b, "    hint: %s\n", c.Hint)
			}
		}
	}
	fmt.Fprintf(&b, "\nStatus: %s, %s, %d ok\n",
		plural(r.Count(Fail), "failure", "failures"), plural(r.Count(Warn), "warning", "warnings"), r.Count(OK))
	_, err := io.WriteString(w, b.String())
	return err
}
