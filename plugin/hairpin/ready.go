package hairpin

// Ready implements the ready.Readiness interface: ready once every required
// kind has synced, or once startup_timeout has passed, whichever comes
// first. A kind that cannot be listed must not take CoreDNS out of the
// Service endpoints: the plugin is an add-on, the cluster's DNS is not.
func (h *Hairpin) Ready() bool {
	hc := h.cache.Load()
	return hc != nil && hc.serving()
}
