package kubectlhairpin

import (
	"context"
	"fmt"
	"strings"
)

// Judge turns facts into the report: the groups in order, each group's
// checks in the order of the facts, which Gather sorts.
func Judge(f *Facts) Report {
	r := Report{Checks: []Check{}}
	f.hints = newHintPlan(f) // one plan per report
	for _, judge := range []func(*Facts) []Check{
		checkAccess, checkCoreDNS, checkControllers, checkLoadBalancers, checkTargets, checkHosts, checkDNS,
	} {
		r.Checks = append(r.Checks, judge(f)...)
	}
	return r
}

// Run gathers the facts and judges them. Its error wraps ErrUnreadable.
func Run(ctx context.Context, c Clients, opts Options) (Report, error) {
	f, err := Gather(ctx, c, opts)
	if err != nil {
		return Report{}, err
	}
	return Judge(f), nil
}

// listed joins names, the first few of them: a report line stays a line.
func listed(names []string) string {
	const most = 5
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// plural is "1 thing" or "n things".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// hostName is a host as people write it: no trailing dot.
func hostName(fqdn string) string {
	if fqdn == "." {
		return fqdn
	}
	return strings.TrimSuffix(fqdn, ".")
}

func hostNames(fqdns []string) []string {
	out := make([]string, len(fqdns))
	for i, h := range fqdns {
		out[i] = hostName(h)
	}
	return out
}

// chartName is the chart's key of a target, its Service's name.
func chartName(target string) string {
	_, name, ok := strings.Cut(target, "/")
	if !ok {
		return target
	}
	return name
}

// verb is the form of a verb that agrees with n: "is" or "are".
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
