// Package routeflag is hairpin-proxy's --route flag: the syntax of one
// route's value, the flag's name and environment twin, and how a command
// line of the proxy yields its routes. hairpin-proxy parses its --route
// values with Parse; kubectl-hairpin reads a proxy container's routes with
// FromContainer, which reads every spelling the command accepts.
//
// It imports only the standard library and proxy/internal/hostport, so
// that a tool reads routes without linking the proxy.
package routeflag
