package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/coredns-hairpin/hairpin/proxy"
	"github.com/coredns-hairpin/hairpin/proxy/routeflag"
)

// options is what the command line yields: the proxy Config plus settings
// that belong to the process rather than to the proxy.
type options struct {
	Config proxy.Config
	// LogFormat is "text" or "json".
	LogFormat string
	// LogLevel is "debug", "info", "warn" or "error".
	LogLevel string
	// Version asks the command to print its version and exit; Config is not
	// validated then.
	Version bool
}

// envName returns the environment twin of a flag name: --drain-timeout is
// also read from HAIRPIN_PROXY_DRAIN_TIMEOUT.
func envName(flagName string) string {
	return routeflag.EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// routeList is the repeatable --route flag.
type routeList struct{ routes *[]proxy.Route }

func (l routeList) String() string {
	if l.routes == nil {
		return ""
	}
	s := make([]string, len(*l.routes))
	for i, r := range *l.routes {
		s[i] = r.String()
	}
	return strings.Join(s, " ")
}

func (l routeList) Set(v string) error {
	r, err := routeflag.Parse(v)
	if err != nil {
		return err
	}
	*l.routes = append(*l.routes, r)
	return nil
}

// durationValue rejects negative values at parse time so the message names
// the flag the user typed.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (examples: 500ms, 5s, 10m)", s)
	}
	if d < 0 {
		return fmt.Errorf("negative duration %s", s)
	}
	*v.d = d
	return nil
}

// choiceValue accepts one of a fixed set of words.
type choiceValue struct {
	s       *string
	choices []string
}

func (v choiceValue) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}

func (v choiceValue) Set(s string) error {
	for _, c := range v.choices {
		if strings.EqualFold(s, c) {
			*v.s = c
			return nil
		}
	}
	return fmt.Errorf("unknown value %q (want %s)", s, strings.Join(v.choices, " or "))
}

// intValue parses a decimal int with a clearer message than flag's own.
type intValue struct{ n *int }

func (v intValue) String() string {
	if v.n == nil {
		return ""
	}
	return strconv.Itoa(*v.n)
}

func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v.n = n
	return nil
}

// removedFlag is a flag that earlier builds had. Giving it fails with its
// text, which says what to do, rather than with "flag provided but not
// defined"; it is in no usage text.
type removedFlag string

func (r removedFlag) String() string   { return "" }
func (r removedFlag) Set(string) error { return errors.New(string(r)) }
func (r removedFlag) IsBoolFlag() bool { return true }

type flagDoc struct {
	name, arg, usage string
	noEnv            bool
}

// newFlagSet defines the command's flags on o. routeflag.FromContainer
// reads a command line of these flags; a test holds the two in step.
func newFlagSet(o *options) *flag.FlagSet {
	c := &o.Config
	fs := flag.NewFlagSet("hairpin-proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(routeList{&c.Routes}, routeflag.Name, "")
	fs.Var(intValue{&c.ProxyProtocol}, "proxy-protocol", "")
	fs.Var(durationValue{&c.DialTimeout}, "dial-timeout", "")
	fs.Var(durationValue{&c.IdleTimeout}, "idle-timeout", "")
	fs.Var(intValue{&c.MaxConns}, "max-conns", "")
	fs.Var(durationValue{&c.DrainTimeout}, "drain-timeout", "")
	fs.Var(durationValue{&c.Lameduck}, "lameduck", "")
	fs.StringVar(&c.HealthAddr, "health-addr", c.HealthAddr, "")
	fs.Var(durationValue{&c.ReadyInterval}, "ready-interval", "")
	fs.Var(choiceValue{&o.LogFormat, []string{"text", "json"}}, "log-format", "")
	fs.Var(choiceValue{&o.LogLevel, []string{"debug", "info", "warn", "error"}}, "log-level", "")
	fs.BoolVar(&o.Version, "version", false, "")
	fs.Var(removedFlag("--kernel-relay was removed (the in-kernel relay of pre-release builds): delete it from the proxy's arguments (chart: proxy.extraArgs)"), "kernel-relay", "")
	return fs
}

// parseArgs parses the command line (without the program name) and, for
// every flag not given there, its HAIRPIN_PROXY_* environment twin; flags
// win over the environment. lookupEnv is os.LookupEnv in production. Help
// goes to out; on --help the error is flag.ErrHelp. Unless --version is
// given, the resulting Config is validated.
func parseArgs(args []string, lookupEnv func(string) (string, bool), out io.Writer) (options, error) {
	o := options{Config: proxy.DefaultConfig(), LogFormat: "text", LogLevel: "info"}
	c := &o.Config
	fs := newFlagSet(&o)
	docs := []flagDoc{
		{routeflag.Name, routeflag.Syntax, "Route to serve; repeat the flag for more routes. Listen on LISTEN (IP literal or empty host, e.g. :8080), dial UPSTREAM host:port (a name is re-resolved at most once a second), and write header-port (default: the UPSTREAM port) as the PROXY destination port and dest-addr (default: the accepted socket's local address, in a cluster the proxy pod's IP after DNAT, not the ClusterIP) as its destination address. The env twin holds routes separated by whitespace; when any --route flag is given the env twin is ignored. Required.", false},
		{"proxy-protocol", "1|2", "PROXY protocol version to write.", false},
		{"dial-timeout", "DURATION", "Upper bound on one upstream dial, DNS included. Must be > 0.", false},
		{"idle-timeout", "DURATION", "Close a connection after no bytes moved in either direction for this long; 0 disables it and turns on TCP keepalive instead.", false},
		{"max-conns", "N", "Cap on concurrent connections across all routes of the process; a connection beyond it is reset at once. 0 means no cap. The default fits the fd limit: (RLIMIT_NOFILE - 64) / 6, since a connection holds 2 sockets and, while splicing, up to 2 pipes of 2 fds.", false},
		{"drain-timeout", "DURATION", "On SIGTERM/SIGINT, how long in-flight connections may continue after the listeners close; then they are closed.", false},
		{"lameduck", "DURATION", "On SIGTERM/SIGINT, how long to keep accepting (with /readyz failing) before closing the listeners.", false},
		{"health-addr", "ADDR", "Listen address for /healthz, /readyz and /metrics; empty disables.", false},
		{"ready-interval", "DURATION", "Period of the background TCP check of every upstream that drives /readyz. Must be > 0.", false},
		{"log-format", "text|json", "Log format.", false},
		{"log-level", "debug|info|warn|error", "Log level; debug logs every connection.", false},
		{"version", "", "Print the version and exit.", true},
	}
	defaults := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) { defaults[f.Name] = f.Value.String() })

	// The flag package prints usage on every parse error; the full help
	// would bury the one-line error, so usage is only written for --help.
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(out, docs, defaults)
			return o, flag.ErrHelp
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags take the form --name=value)", fs.Arg(0))
	}

	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, d := range docs {
		if d.noEnv || given[d.name] {
			continue
		}
		env := envName(d.name)
		v, ok := lookupEnv(env)
		if !ok {
			continue
		}
		if d.name == routeflag.Name {
			for _, r := range strings.Fields(v) {
				if err := fs.Set(routeflag.Name, r); err != nil {
					return o, fmt.Errorf("%s: %w", env, err)
				}
			}
			continue
		}
		if err := fs.Set(d.name, v); err != nil {
			return o, fmt.Errorf("%s=%q: %w", env, v, err)
		}
	}
	if o.Version {
		return o, nil
	}
	if len(c.Routes) == 0 {
		return o, errors.New("no routes: give at least one --route " + routeflag.Syntax)
	}
	if err := c.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

func writeUsage(w io.Writer, docs []flagDoc, defaults map[string]string) {
	fmt.Fprintf(w, "Usage: hairpin-proxy --route %s [--route ...] [flags]\n\n", routeflag.Syntax)
	fmt.Fprintln(w, "Accepts TCP connections, writes a PROXY protocol header with the real client")
	fmt.Fprintln(w, "address, and relays the bytes untouched to the route's upstream.")
	fmt.Fprintln(w, "Every flag can also be set through its environment twin; a flag wins.")
	fmt.Fprintln(w, "\nFlags:")
	for _, d := range docs {
		fmt.Fprintf(w, "  --%s", d.name)
		if d.arg != "" {
			fmt.Fprintf(w, " %s", d.arg)
		}
		fmt.Fprintf(w, "\n      %s\n", d.usage)
		var extra []string
		if !d.noEnv {
			extra = append(extra, "env "+envName(d.name))
		}
		if def := defaults[d.name]; def != "" && d.name != "version" {
			extra = append(extra, fmt.Sprintf("default %q", def))
		}
		if len(extra) > 0 {
			fmt.Fprintf(w, "      (%s)\n", strings.Join(extra, ", "))
		}
	}
	fmt.Fprintln(w, "\nExample:")
	fmt.Fprintln(w, "  hairpin-proxy --route :8080=ingress-nginx-controller.ingress-nginx.svc:80 \\")
	fmt.Fprintln(w, "                --route :8443=ingress-nginx-controller.ingress-nginx.svc:443")
}
