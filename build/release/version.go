package main

import (
	"fmt"
	"regexp"
	"strings"
)

// semver is a SemVer 2.0 version without its "v" (the regular expression
// semver.org gives).
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// version is a release version, vX.Y.Z[-PRERELEASE]: the images' tag and
// the chart's appVersion; without the "v" it is the chart's version.
type version string

// parseVersion accepts what `git describe --tags` prints for a v* tag
// (v0.1.0, v0.1.0-3-gabc1234, v0.1.0-dirty) and refuses anything a chart
// version or an image tag cannot be, such as a bare commit.
func parseVersion(s string) (version, error) {
	if !strings.HasPrefix(s, "v") || !semver.MatchString(s[1:]) {
		return "", fmt.Errorf("version %q: want vX.Y.Z (SemVer with a leading v, as a v* tag); without a tag, git describe gives a commit, so set VERSION=vX.Y.Z", s)
	}
	if strings.Contains(s, "+") {
		return "", fmt.Errorf("version %q: build metadata (+...) cannot be an image tag; use a pre-release (-...) instead", s)
	}
	return version(s), nil
}

// Tag is the images' tag and the chart's appVersion: the version as given.
func (v version) Tag() string { return string(v) }

// Chart is the chart's version: the version without its "v".
func (v version) Chart() string { return strings.TrimPrefix(string(v), "v") }
