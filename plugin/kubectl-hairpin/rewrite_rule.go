package kubectlhairpin

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The grammar of a CoreDNS rewrite rule, as CoreDNS v1.15.0 reads it
// (coredns/coredns v1.15.0: coredns/coredns plugin/rewrite/setup.go rewriteParse,
// rewrite.go newRule, name.go newNameRule and parseAnswerRules):
//
//	rewrite [continue|stop] name [exact|prefix|suffix|substring] FROM TO [answer ...]
//	rewrite [continue|stop] name regex FROM TO [metadata] [answer ...]
//	rewrite [continue|stop] {
//	    name ... FROM TO
//	    answer ...
//	}
//
// The block form is the same words: CoreDNS appends every token of the
// block to the line's arguments. Only the question's name matters here;
// the answer options rewrite responses, and the other fields (type, class,
// edns0, ttl, cname, rcode) leave the name alone.
const (
	rewriteContinue  = "continue"
	rewriteStop      = "stop"
	rewriteName      = "name"
	rewriteAnswer    = "answer"
	rewriteMetadata  = "metadata"
	matchExact       = "exact"
	matchPrefix      = "prefix"
	matchSuffix      = "suffix"
	matchSubstring   = "substring"
	matchRegex       = "regex"
	answerAuto       = "auto"
	answerName       = "name"
	answerValue      = "value"
	maxRewriteRegexp = 10000 // name.go maxRegexpLen
)

// The fields of a rewrite rule other than name: valid, and they never
// change the name a later plugin sees (rewrite.go newRule).
var otherRewriteFields = []string{"class", "type", "edns0", "ttl", "cname", "rcode"}

// nameRewrite is the match of one rewrite rule on the question's name:
// the names it rewrites never reach a plugin after rewrite, hairpin
// among them.
type nameRewrite struct {
	// match is one of the match types; from is normalised as CoreDNS
	// does (lowercase, with a closing dot) except for regex, whose
	// pattern is re.
	match string
	from  string
	re    *regexp.Regexp
}

// errNoNameRewrite says that a rule rewrites some other field.
var errNoNameRewrite = errors.New("the rule does not rewrite names")

// parseRewrite reads the arguments of one rewrite directive, the words
// after "rewrite" (with the block's words appended, as CoreDNS does). It
// returns errNoNameRewrite for a valid rule of another field, and any
// other error for a rule CoreDNS would refuse or this reading does not
// know.
func parseRewrite(args []string) (nameRewrite, error) {
	if len(args) == 0 {
		return nameRewrite{}, errors.New("no rule type")
	}
	// The leading continue or stop decides only whether later rules run
	// on the rewritten name; the name is rewritten either way.
	if m := strings.ToLower(args[0]); m == rewriteContinue || m == rewriteStop {
		if len(args) < 2 {
			return nameRewrite{}, fmt.Errorf("%s must be followed by a rule type", m)
		}
		args = args[1:]
	}
	field := strings.ToLower(args[0])
	switch {
	case field == rewriteName:
		return parseNameRewrite(args[1:])
	case slices.Contains(otherRewriteFields, field):
		return nameRewrite{}, errNoNameRewrite
	}
	return nameRewrite{}, fmt.Errorf("invalid rule type %q", args[0])
}

// parseNameRewrite follows name.go newNameRule: two arguments are an
// exact FROM TO; with more, the first is the match type.
func parseNameRewrite(args []string) (nameRewrite, error) {
	if len(args) < 2 {
		return nameRewrite{}, errors.New("too few arguments for a name rule")
	}
	if len(args) == 2 {
		return nameRewrite{match: matchExact, from: normalizeName(args[0])}, nil
	}
	r := nameRewrite{match: strings.ToLower(args[0])}
	answers := args[3:]
	switch r.match {
	case matchExact, matchPrefix, matchSuffix, matchSubstring:
		r.from = normalizeName(args[1])
	case matchRegex:
		if len(args[1]) > maxRewriteRegexp {
			return nameRewrite{}, fmt.Errorf("regex pattern too long: %d > %d", len(args[1]), maxRewriteRegexp)
		}
		re, err := regexp.Compile(args[1])
		if err != nil {
			return nameRewrite{}, fmt.Errorf("invalid regex matching pattern %s: %w", args[1], err)
		}
		r.re = re
		if len(answers) > 0 && answers[0] == rewriteMetadata {
			answers = answers[1:]
		}
	default:
		return nameRewrite{}, fmt.Errorf("name rule supports only exact, prefix, suffix, substring, and regex name matching, received: %s", args[0])
	}
	if len(answers) > 0 {
		if err := checkAnswers(answers); err != nil {
			return nameRewrite{}, err
		}
	}
	return r, nil
}

// checkAnswers follows name.go parseAnswerRules: "answer" opens the list,
// and each option is auto, or name/value with two arguments.
func checkAnswers(args []string) error {
	if len(args) < 2 || args[0] != rewriteAnswer {
		return fmt.Errorf("unexpected arguments after the name rule: %s", strings.Join(args, " "))
	}
	auto, names := false, 0
	for i := 0; i < len(args); {
		if args[i] == rewriteAnswer {
			i++
		}
		if i == len(args) {
			return errors.New("type missing for answer rule")
		}
		opt := args[i]
		i++
		switch opt {
		case answerAuto:
			auto = true
		case answerName, answerValue:
			if len(args)-i < 2 {
				return fmt.Errorf("%s answer rule: 2 arguments required", opt)
			}
			if _, err := regexp.Compile(args[i]); err != nil {
				return fmt.Errorf("%s answer rule: invalid regex %s: %w", opt, args[i], err)
			}
			if opt == answerName {
				names++
			}
			i += 2
		default:
			return fmt.Errorf("invalid type %q for answer rule", opt)
		}
	}
	if auto && names > 0 {
		return errors.New("auto name answer rule cannot be combined with explicit name answer rules")
	}
	return nil
}

// normalizeName is plugin.Name.Normalize of coredns/coredns plugin/normalize.go:
// lowercase, with a closing dot. CoreDNS applies it to prefix and
// substring too, so `prefix app` matches "app." at the start of a name.
func normalizeName(s string) string {
	s = strings.ToLower(s)
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// covers reports whether the rule rewrites host (a lowercase FQDN), or for
// a wildcard host "*.zone." some name that the wildcard answers: one
// label, any label, in front of the zone. The query name CoreDNS matches
// is lowercase with its closing dot (request.Request.Name).
func (r nameRewrite) covers(host string) bool {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return r.coversWildcard("." + rest)
	}
	switch r.match {
	case matchExact:
		return host == r.from
	case matchPrefix:
		return strings.HasPrefix(host, r.from)
	case matchSuffix:
		return strings.HasSuffix(host, r.from)
	case matchSubstring:
		return strings.Contains(host, r.from)
	}
	return r.re.MatchString(host)
}

// coversWildcard decides the wildcard whose fixed part is tail (".zone.")
// for the names LABEL+tail. The literal forms are decided exactly: some
// label can always be chosen to hold a text without a dot. A regex is
// tried on a synthetic label and on the first label of its literal
// prefix, so that ^app\.zone\.$ counts for *.zone; a regex that matches
// only some other label it spells out is missed.
func (r nameRewrite) coversWildcard(tail string) bool {
	switch r.match {
	case matchExact:
		label, ok := strings.CutSuffix(r.from, tail)
		return ok && label != "" && !strings.Contains(label, ".")
	case matchPrefix:
		// The prefix's first label is the wildcard's, the rest starts tail.
		i := strings.Index(r.from, ".")
		return i < 0 || (i > 0 && strings.HasPrefix(tail, r.from[i:]))
	case matchSuffix:
		if strings.HasSuffix(tail, r.from) {
			return true
		}
		label, ok := strings.CutSuffix(r.from, tail)
		return ok && !strings.Contains(label, ".")
	case matchSubstring:
		// Inside tail, or from the end of the label into tail.
		i := strings.Index(r.from, ".")
		return i < 0 || strings.Contains(tail, r.from) || strings.HasPrefix(tail, r.from[i:])
	}
	probes := []string{wildcardProbe + tail}
	if prefix, _ := r.re.LiteralPrefix(); strings.Contains(prefix, ".") {
		if label, _, _ := strings.Cut(prefix, "."); label != "" {
			probes = append(probes, label+tail)
		}
	}
	return slices.ContainsFunc(probes, r.re.MatchString)
}

// wildcardProbe is the label a regex is tried with for a wildcard host: a
// name no one would give a host, so that a rule matching it matches any.
const wildcardProbe = "hairpin-wildcard-probe"
