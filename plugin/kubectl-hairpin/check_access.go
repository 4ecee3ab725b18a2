package kubectlhairpin

// checkAccess says which reads were denied, and so which facts are
// missing from the other checks.
func checkAccess(f *Facts) []Check {
	if len(f.Denied) == 0 {
		return []Check{newCheck(idClusterAccess, OK, "every read was allowed")}
	}
	var out []Check
	for _, d := range f.Denied {
		out = append(out, newCheck(idClusterAccess, Warn, "may not %s: %s", d.Read, d.Impact).
			hint("grant get, list and watch on it (the docs have a read-only ClusterRole for kubectl hairpin check), or run as a user who may"))
	}
	return out
}
