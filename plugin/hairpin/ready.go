package hairpin

// Ready implements the ready.Readiness interface: ready once the first full
// list of every watched kind is in the index.
func (h *Hairpin) Ready() bool {
	hc := h.cache.Load()
	return hc != nil && hc.hasSynced()
}
