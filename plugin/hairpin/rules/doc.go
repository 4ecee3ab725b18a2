// Package rules is what hairpin decides from the API objects alone: which
// Services are targets and what their annotations select, which target
// fronts an Ingress or a Gateway, which hostnames those objects and their
// routes name, and which of them a target may answer. The CoreDNS plugin
// (plugin/hairpin) applies these rules in its informers; kubectl-hairpin
// applies them to what it lists, to explain what CoreDNS answers and why.
//
// It imports only the Kubernetes and Gateway API types and apimachinery's
// validation, so that a tool can use it without linking CoreDNS.
package rules
