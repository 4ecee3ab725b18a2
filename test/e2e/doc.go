// Package e2e is hairpin's end-to-end test: real binaries only. Our CoreDNS
// build and hairpin-proxy run as child processes next to a real nginx
// configured like ingress-nginx with use-proxy-protocol, a second CoreDNS
// that plays the public DNS, and a real kube-apiserver and etcd; dig and curl
// are the clients.
//
// The test shows both halves of the end-to-end layer of docs/architecture.md, "Tests": without
// the hairpin plugin the name resolves to the "LoadBalancer" address, the
// connection reaches nginx without a PROXY header and nginx refuses it
// ("broken header"); with it, the name resolves to the proxy Service's
// ClusterIP, the proxy adds the header and nginx sees the real client.
//
// TestTargetsEveryHostReachesItsOwnController shows docs/architecture.md's "Targets":
// several PROXY-protocol controllers (two tenants' ingress-nginx and a
// Gateway's data plane), each fronted by its own target Service in
// hairpin-system and served by one hairpin-proxy process, next to a
// controller that does not speak PROXY; CoreDNS has the bare `hairpin` line.
// Each host reaches its own controller, with the client's address in the
// PROXY header, and nothing else is touched.
//
// The non-test part of the package, [StartStack], starts that whole picture
// so that `make demo` (test/demo) runs exactly what the tests run.
//
// Run it with
//
//	KUBEBUILDER_ASSETS=$(build/tools.sh --dir) HAIRPIN_BIN=$PWD/bin HAIRPIN_REQUIRE_E2E=1 \
//		go test -race -count=1 -v ./test/e2e/
//
// Every address is on loopback: the "LoadBalancer IP" is a free address in
// 127.0.0.0/8, and Service ClusterIPs come from the control plane's loopback
// service range (harness.ServiceCIDR), so the proxy can listen on them.
package e2e
