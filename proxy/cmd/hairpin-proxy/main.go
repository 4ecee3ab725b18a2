// Command hairpin-proxy accepts TCP connections, writes a PROXY protocol
// header carrying the real client address, and relays the bytes untouched
// to an upstream such as the ingress-nginx Service. See proxy/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/coredns-hairpin/hairpin/proxy"
)

// version is stamped by the Makefile with -X main.version=….
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// run is main without the process exit, so tests can drive it in-process
// (real signals included). Exit codes: 0 clean exit, 1 runtime failure,
// 2 bad configuration.
func run(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	opts, err := parseArgs(args, lookupEnv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "hairpin-proxy: %v\nRun hairpin-proxy --help for usage.\n", err)
		return 2
	}
	if opts.Version {
		fmt.Fprintf(stdout, "hairpin-proxy %s\n", version)
		return 0
	}
	log, err := newLogger(stderr, opts.LogFormat, opts.LogLevel)
	if err != nil {
		fmt.Fprintf(stderr, "hairpin-proxy: %v\n", err)
		return 2
	}

	// Subscribe before binding so a SIGTERM that arrives during startup still
	// takes the graceful path.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	srv, err := proxy.New(opts.Config, proxy.WithLogger(log), proxy.WithVersion(version))
	if err != nil {
		log.Error("startup failed", "err", err)
		return 2
	}
	if err := srv.Start(); err != nil {
		log.Error("startup failed", "err", err)
		return 1
	}
	listening := make([]string, 0, len(opts.Config.Routes))
	for _, r := range opts.Config.Routes {
		listening = append(listening, r.Name+"="+srv.Addr(r.Name).String())
	}
	attrs := []any{"version", version, "routes", listening}
	if a := srv.HealthAddr(); a != nil {
		attrs = append(attrs, "health_addr", a.String())
	}
	log.Info("hairpin-proxy started", attrs...)

	sig := <-sigs
	log.Info("signal received; shutting down", "signal", sig.String())
	// A second signal skips the remaining lameduck and drain time.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if s, ok := <-sigs; ok {
			log.Warn("second signal; closing all connections now", "signal", s.String())
			cancel()
		}
	}()
	if err := srv.Shutdown(ctx); err != nil {
		log.Error("shutdown failed", "err", err)
		return 1
	}
	return 0
}
