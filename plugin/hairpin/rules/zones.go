package rules

import "strings"

// MatchZone returns the longest of zones that contains name, or "". Both are
// lowercase FQDNs; "." contains every name. It does not allocate: the
// plugin calls it for every host it indexes and for every NODATA answer.
func MatchZone(zones []string, name string) string {
	best := ""
	for _, z := range zones {
		if len(z) > len(best) && inZone(z, name) {
			best = z
		}
	}
	return best
}

// InZones reports whether name (a lowercase FQDN, maybe "*.") is inside one
// of zones.
func InZones(zones []string, name string) bool { return MatchZone(zones, name) != "" }

// inZone reports whether name is zone or ends in "." + zone.
func inZone(zone, name string) bool {
	if zone == "." {
		return true
	}
	if !strings.HasSuffix(name, zone) {
		return false
	}
	return len(name) == len(zone) || name[len(name)-len(zone)-1] == '.'
}
