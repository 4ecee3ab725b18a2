package proxy

// The test seams: options that only tests set.

// withDialFunc replaces the upstream dialer, for tests that simulate slow
// or failing upstreams. It is used for client connections and for the
// readiness check alike, and it keeps the loops from connecting by
// themselves.
func withDialFunc(d dialFunc) Option { return func(s *Server) { s.dial = d } }

// withLookup replaces the resolver that refreshes upstream names.
func withLookup(l lookupFunc) Option { return func(s *Server) { s.lookup = l } }
