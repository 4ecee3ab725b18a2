// Package bench holds coredns-hairpin's side-by-side benchmarks against the
// alternatives, run by `make bench` (`go test -run '^TestBench$'` with
// HAIRPIN_BENCH=1): DNS throughput of the hairpin plugin against the hosts
// plugin and the rewrite+kubernetes ("ouroboros") path, propagation delay of
// Ingress changes, CoreDNS memory and startup with 10,000 Ingresses,
// hairpin-proxy against HAProxy (send-proxy) and a direct connection to nginx,
// the plugin order (hairpin in front of cache against behind it, for the
// names that are not hairpin hosts, on kubeadm's stock Corefile), and the
// multi-target index at scale (100,000 Ingresses over 100 targets: hit path,
// memory on kubeadm's stock Corefile, first sync, propagation under 10
// changes per second beside a bare client-go informer).
// The proxy phase also measures what one keep-alive request costs ours and
// HAProxy on one thread each, in system calls (counted by perf's syscall
// tracepoints) and in CPU time (keepalive_test.go);
// BENCH_ONLY=keepalive runs that alone, and BENCH_KEEPALIVE_RUNS=N makes
// N interleaved CPU runs of each proxy instead of 6.
// BENCH_ONLY=scale (or proxy, kube, order) runs only those phases.
//
// `make soak SOAK=30m` (TestSoak, HAIRPIN_SOAK=30m) is the long run of the
// lifecycle test's steady client on the real nftables dataplane under steady
// churn; it writes results.json's soak, which a bench run keeps.
//
// These are benchmarks, not timed tests: they fail only when something is
// broken (errors or wrong answers), never on a number. Results go to
// results.json and results.md in this folder. BENCH_QUICK=1 runs a smoke
// version (one repetition, short durations, 1,000 objects).
//
// Everything runs on loopback: a real kube-apiserver and etcd (envtest, via
// test/harness), our bin/coredns and bin/hairpin-proxy, Debian's nginx,
// haproxy, dnsperf and wrk.
package bench
