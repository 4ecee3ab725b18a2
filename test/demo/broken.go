package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coredns-hairpin/hairpin/test/e2e"
)

// hairpinDirective is a hairpin line in a Corefile.
var hairpinDirective = regexp.MustCompile(`(?m)^\s*hairpin(\s|$)`)

// activatedLog is what our image logs when it adds hairpin to a Corefile
// that names none (build/coredns).
const activatedLog = "plugin/hairpin: activated in server block"

// broken is step 1: the cluster's CoreDNS runs our image with the stock
// Corefile, which has no hairpin line; an in-cluster request to a public
// hostname is refused, and the controller logs "broken header".
func (st *story) broken(ctx context.Context, _ testing.TB) error {
	c := st.c
	st.header("1. Broken: a stock Corefile, our image, and an in-cluster request is refused")
	st.note(fmt.Sprintf("%s's Corefile as it ships, pointed at loopback (test/e2e/distributions.go); no hairpin line:", distributionName))
	st.cmd("cat %s", c.corefile)
	st.block(c.stock)
	if hairpinDirective.MatchString(c.stock) {
		return fmt.Errorf("the stock Corefile %s names hairpin", c.corefile)
	}
	st.note("Our image adds hairpin by itself to every server block that holds kubernetes. With no target")
	st.note("it is inert, a pure pass-through; and until the chart grants it, CoreDNS may not even read")
	st.note("Ingresses, which it says once, and every other name is served as before:")
	st.cmd("grep plugin/hairpin %s", c.coredns.LogPath)
	lines := grepLines(c.coredns.Output(), "plugin/hairpin")
	st.block(strings.Join(lines, "\n"))
	if !containsAny(lines, activatedLog) {
		return fmt.Errorf("CoreDNS did not log %q (log %s)", activatedLog, c.coredns.LogPath)
	}

	ctl := c.controllers[0]
	st.linef("")
	st.note("A pod resolves a public hostname of the cluster and gets the load balancer's IP. kube-proxy")
	st.note("or Cilium sends that straight to the controller, past the load balancer that adds the PROXY header:")
	lb, err := st.dig(ctx, c.dns, ctl.host)
	if err != nil {
		return err
	}
	if lb != ctl.lb {
		return fmt.Errorf("the cluster DNS answered %s with %s, want the public answer %s", ctl.host, lb, ctl.lb)
	}
	res, err := st.curl(ctx, e2e.CurlRequest{Scheme: "https", Host: ctl.host, IP: lb, Port: portOf(ctl.nginx.TLSAddr), CACert: ctl.nginx.Cert.CertFile})
	if err != nil {
		return err
	}
	if res.ExitCode == 0 {
		return fmt.Errorf("curl to the load balancer IP succeeded (status %s); the controller should have refused it", res.Status)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := ctl.nginx.WaitErrorLog(wait, "broken header"); err != nil {
		return err
	}
	st.cmd("tail -n 1 %s", ctl.nginx.ErrorLogPath)
	st.block(brokenHeaderLine(ctl.nginx.ErrorLog()))
	st.note("The controller expected \"PROXY TCP4 <client> <server> <port> <port>\" first and got curl's TLS ClientHello.")
	return nil
}

// grepLines returns the lines of text that contain any of substrs.
func grepLines(text string, substrs ...string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, s := range substrs {
			if strings.Contains(l, s) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func containsAny(lines []string, substr string) bool {
	for _, l := range lines {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}
