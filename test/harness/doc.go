// Package harness starts the real things that hairpin's integration tests,
// end-to-end tests, `make demo` and benchmarks run against: a Kubernetes
// control plane (kube-apiserver and etcd through envtest), child processes
// (our coredns, our hairpin-proxy, nginx) and an nginx configured the way
// ingress-nginx configures itself with `use-proxy-protocol: "true"`.
//
// The package holds no plugin- or proxy-specific code; tests build their
// Corefiles and command lines themselves.
//
// # Usage
//
//	func TestHairpin(t *testing.T) {
//		cp := harness.NewControlPlane(t, harness.ControlPlaneOptions{GatewayAPI: harness.GatewayStandard})
//		// cp.Clientset creates objects; cp.Kubeconfig goes into the Corefile.
//		ngx := harness.StartNginx(t, harness.NginxOptions{})
//		dnsAddr := harness.FreeAddr(t, harness.FreeLoopbackIP(t).String())
//		readyAddr := harness.FreeAddr(t, "127.0.0.1")
//		// ... write a Corefile for dns://dnsAddr with `ready readyAddr` and
//		// `hairpin { kubeconfig cp.Kubeconfig }`
//		coredns := harness.StartProcess(t, "coredns", harness.RequireBinary(t, "coredns"), "-conf", corefile)
//		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
//		defer cancel()
//		if err := coredns.Ready(ctx, harness.HTTPProbe("http://"+readyAddr+"/ready")); err != nil {
//			t.Fatal(err)
//		}
//		r, err := harness.Exchange(ctx, dnsAddr, "app.example.com.", dns.TypeA)
//		// ... dial the answer, check ngx.WaitAccessLog for the real client address
//	}
//
// # The house
//
// The packages under test/harness, each owning one thing:
//
//   - harness (this package): the control plane, child processes, nginx as
//     ingress-nginx runs it, Helm, the helpers below, and the lifecycle
//     that all of them share (below);
//   - cluster: a cluster with a real dataplane. Its nodes are
//     [cluster.Cluster].Nodes, each a [cluster.NodePlan] (name, address,
//     Pod range, counted out from the node's index by [cluster.PlanNode])
//     and its node agent; one node runs, and no node's address is written
//     anywhere but the plan. What serves its
//     Services is a [cluster.Dataplane], kube-proxy in a mode or Cilium
//     with its chart values; a test asks its [cluster.Capabilities], never
//     its name. The outside world (public DNS, HAProxy send-proxy), the
//     workloads (kube-dns, ingress controllers, the Gateway controller) and
//     Cilium's state queries live in files named for them;
//   - node: the node agent, every Pod a process in a network namespace of
//     its own, from its PodSpec (virtual-kubelet's node library);
//   - netns, userns, rootfs, hoststate: network namespaces, the demo's user
//     namespace, images' root filesystems, and the machine's state before
//     and after (sysctls, rule sets, BPF), which nothing may change;
//   - cgroup2: the node's child of the cgroup2 hierarchy, which every
//     process of the node's and its Pods' namespaces starts in (a namespace
//     carries it as netns.NS.Cgroup), and where a dataplane's socket
//     programs attach: they act on the node, never on the machine;
//   - steady: the lifecycle tests' steady client, a command of its own.
//
// # Lifecycle
//
// Whatever starts something pushes what undoes it onto one [Teardown]: a
// stack of named steps, run last pushed first, every step even after
// another failed, the errors joined under their steps' names. A test's own
// t.Cleanup is that stack for what the test starts itself. What outlives a
// test has a [Suite], the one fake testing.TB: its Cleanup and
// [Suite.Defer] push onto its Teardown (a child's stop is a step named for
// the child), [Suite.Run] turns a helper's Fatal or skip into an error,
// and [Suite.Close] runs the stack.
//
//	cluster.New(ctx, opts) -> *Cluster    // as envtest's Start: a Suite of its own;
//	    network namespaces                //   each part pushes its undo:
//	    control plane                     //   pushed first, undone last
//	    kube-controller-manager, kube-scheduler, the dataplane
//	    public DNS, node agent, dump on failure, load balancer
//	Cluster.Close() error                 // as envtest's Stop: the stack, LIFO
//	cluster.Start(t, opts)                // New for t; t.Cleanup(Close)
//
// A New that fails tears down what it started before it returns. The
// package's shared clusters (test/dataplane) live under that package's
// Suite, which TestMain closes after m.Run; `make demo` runs its story
// under a Suite too, logging to its file and keeping its folders.
//
// A test gets a cluster of a shape from test/dataplane: dataplane.Shared
// (one cluster per dataplane name, shared by the package's stories) or
// dataplane.StartWith (a Config: the dataplane's name, the distribution's
// Corefile, the cluster domain, the node's search domains, the
// controllers). HAIRPIN_DATAPLANES picks which dataplanes a run covers
// ([cluster.Dataplanes]); a shape beyond the modes (cluster.Shapes: the
// Cozystack tenant's Cilium, cozy-tenant) is covered with its mode
// ([cluster.Covers]) and tells a story of its own.
//
// # Helpers every test package shares
//
// Test packages use these instead of copies of their own:
//
//   - waiting: [Poll] (with backoff) and [PollEvery] (fixed interval, for
//     measured waits) run a [Probe]; [Eventually] checks in-process state;
//   - DNS: [Exchange] sends one query, [ARecords] extracts
//     the addresses, [AProbe] waits for an exact A answer;
//   - addresses: [FreePort] and [FreeAddr] (free for TCP and UDP alike, as DNS
//     servers need), [FreeLoopbackIP], [CanListen], [PortOf];
//   - upstreams: [StartUpstream] and [StartEchoUpstream], an in-process
//     PROXY-protocol receiver that records each header and sets readiness
//     probes aside;
//   - files and metrics: [WriteFile], [ScrapeMetrics] and [MetricValue].
//
// # Environment
//
//   - KUBEBUILDER_ASSETS: the folder with kube-apiserver and etcd, as printed by
//     `build/tools.sh --dir` (`make tools` fills it). When it is unset, tests
//     that need a control plane are skipped, unless HAIRPIN_REQUIRE_E2E=1, in
//     which case they fail. `make test` sets both.
//   - HAIRPIN_BIN: the folder with our coredns and hairpin-proxy binaries
//     (`make build`); see [RequireBinary].
//   - HAIRPIN_NGINX: the nginx binary (default /usr/sbin/nginx).
//
// # Stopping a control plane
//
// Stop every informer (close the stop channel, cancel the context) before
// [ControlPlane.Stop]. kube-apiserver drains open watch requests before it
// exits, and envtest only kills it after its stop timeout, so one forgotten
// informer costs 20 seconds per control plane. [ControlPlane.StopAPIServer]
// is meant to cut live watches and therefore kills after a short grace period.
//
// # Children
//
// Every [Process] runs in its own process group and is killed with the whole
// group when the test ends, also when it fails or panics (t.Cleanup), and by
// the kernel when the test binary dies (Pdeathsig). When the test failed, the
// tail of each child's output is printed with t.Log.
package harness
