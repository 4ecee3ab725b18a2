package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/coredns/caddy"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/coredns-hairpin/hairpin/build/coredns/activate"
)

// The switch for image-only activation (docs/architecture.md, "Activation"): on unless
// the flag or its environment twin says otherwise; the flag wins.
const (
	activateFlag = "hairpin.activate"
	activateEnv  = "COREDNS_HAIRPIN_ACTIVATE"
)

// The namespace the activated stanza discovers targets in, when it is not
// the plugin's default: a flag and its environment twin, because the
// Deployment's arguments survive a distribution's re-render of the
// Corefile and a `targets` line written into it would not. The flag wins.
const (
	targetsFlag = "hairpin.targets"
	targetsEnv  = "COREDNS_HAIRPIN_TARGETS"
)

var alog = clog.NewWithPlugin(activate.Directive)

// loader owns the loading of the Corefile, at startup and on every reload.
//
// CoreDNS loads the Corefile through caddy's Corefile loaders, at startup
// (caddy.LoadCaddyfile), in the reload plugin (the same call, every check),
// and on SIGUSR1 (the loader that loaded it first). caddy refuses a second
// loader that also returns input, so adding ours next to coremain's -conf
// loader would break startup. Instead this loader takes the -conf flag over
// (coremain's flag loader then always returns nothing) and is the only one
// that returns input: it reads the file the way coremain does and passes
// the text through activate.Transform. So activation is applied to exactly
// what CoreDNS parses, every time it parses it.
type loader struct {
	conf    confFlag      // -conf, taken from coremain
	on      bool          // -hairpin.activate
	targets namespaceFlag // -hairpin.targets; "" is the plugin's default

	mu   sync.Mutex
	last string // what was last logged: a reload that changes nothing logs nothing
}

var corefileLoader = &loader{on: true}

func init() {
	corefileLoader.register(flag.CommandLine)
}

// register takes -conf over from coremain, defines -hairpin.activate and
// registers the loader with caddy.
func (l *loader) register(fs *flag.FlagSet) {
	if f := fs.Lookup("conf"); f != nil {
		f.Value = &l.conf
	} else {
		fs.Var(&l.conf, "conf", `Corefile to load (default "`+caddy.DefaultConfigFile+`")`)
	}
	fs.BoolVar(&l.on, activateFlag, true, "add hairpin to every server block that holds kubernetes when the Corefile names no hairpin (env "+activateEnv+")")
	fs.Var(&l.targets, targetsFlag, "namespace the added hairpin discovers targets in (default: the plugin's, hairpin-system; env "+targetsEnv+")")
	caddy.RegisterCaddyfileLoader("flag", caddy.LoaderFunc(l.load))
}

// fromEnv sets the defaults of -hairpin.activate and -hairpin.targets from
// the environment. A value that is not a boolean, or not a namespace name,
// stops startup, naming the variable.
func (l *loader) fromEnv(lookup func(string) (string, bool)) error {
	if v, ok := lookup(activateEnv); ok && strings.TrimSpace(v) != "" {
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s=%q: want true or false: %w", activateEnv, v, err)
		}
		l.on = on
	}
	if v, ok := lookup(targetsEnv); ok && strings.TrimSpace(v) != "" {
		if err := l.targets.Set(strings.TrimSpace(v)); err != nil {
			return fmt.Errorf("%s=%q: %w", targetsEnv, v, err)
		}
	}
	return nil
}

// load reads the Corefile as coremain's loaders do (-conf PATH, -conf stdin,
// else ./Corefile if it exists) and activates hairpin in it.
func (l *loader) load(serverType string) (caddy.Input, error) {
	in, err := l.read(serverType)
	if in == nil || err != nil {
		return nil, err
	}
	if !l.on {
		l.report([]message{{text: "activation is off (-" + activateFlag + "=false or " + activateEnv + "=false); the Corefile is used as written"}})
		return in, nil
	}
	res := activate.Options{Targets: string(l.targets)}.Transform(in.Filepath, in.Contents)
	l.report(messages(res, string(l.targets)))
	in.Contents = res.Corefile
	return in, nil
}

func (l *loader) read(serverType string) (*caddy.CaddyfileInput, error) {
	path := string(l.conf)
	switch path {
	case "stdin":
		in, err := caddy.CaddyfileFromPipe(os.Stdin, serverType)
		if err != nil || in == nil {
			return nil, err
		}
		ci, ok := in.(caddy.CaddyfileInput)
		if !ok {
			return nil, fmt.Errorf("reading the Corefile from stdin: unexpected input type %T", in)
		}
		return &ci, nil
	case "":
		path = caddy.DefaultConfigFile
		contents, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // caddy falls back to its default input
		}
		if err != nil {
			return nil, err
		}
		return &caddy.CaddyfileInput{Contents: contents, Filepath: path, ServerTypeName: serverType}, nil
	}
	contents, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	return &caddy.CaddyfileInput{Contents: contents, Filepath: path, ServerTypeName: serverType}, nil
}

// message is one startup log line.
type message struct {
	warning bool
	text    string
}

// report logs msgs unless they are what was logged last.
func (l *loader) report(msgs []message) {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "%v %s\n", m.warning, m.text)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b.String() == l.last {
		return
	}
	l.last = b.String()
	for _, m := range msgs {
		if m.warning {
			alog.Warning(m.text)
		} else {
			alog.Info(m.text)
		}
	}
}

// messages says where hairpin was activated, discovering targets in
// targets when it is set, and why, or why not.
func messages(res activate.Result, targets string) []message {
	switch {
	case res.Unplaced != nil:
		return []message{{warning: true, text: fmt.Sprintf("not activated: %v; the Corefile is used as written", res.Unplaced)}}
	case res.Explicit:
		return []message{{text: "not activated: the Corefile names hairpin; it is used as written"}}
	}
	var msgs []message
	for _, b := range res.Activated {
		with := ""
		if len(b.Kubeconfig) > 0 {
			with = " with the kubernetes plugin's kubeconfig " + strings.Join(b.Kubeconfig, " ")
		}
		if targets != "" {
			with += " discovering targets in " + targets + " (-" + targetsFlag + ")"
		}
		msgs = append(msgs, message{text: fmt.Sprintf("activated in server block %s%s (it holds kubernetes; the Corefile names no hairpin); -%s=false turns this off", b.Keys, with, activateFlag)})
	}
	for _, b := range res.Imported {
		msgs = append(msgs, message{warning: true, text: fmt.Sprintf("not activated in server block %s from %s: it holds kubernetes but comes from an import, which is not edited; add a hairpin line there to serve hairpin hosts from it", b.Keys, b.File)})
	}
	if len(msgs) == 0 {
		msgs = append(msgs, message{text: "not activated: no server block holds kubernetes"})
	}
	return msgs
}

// confFlag is -conf, taken over from coremain.
type confFlag string

func (c *confFlag) String() string     { return string(*c) }
func (c *confFlag) Set(v string) error { *c = confFlag(v); return nil }

// namespaceFlag is -hairpin.targets: empty, or a Kubernetes namespace name
// (an RFC 1123 label).
type namespaceFlag string

func (n *namespaceFlag) String() string { return string(*n) }

// Set refuses what cannot be a namespace, so that a typo stops startup
// instead of making the plugin watch a namespace that never holds targets.
// "" is the plugin's default.
func (n *namespaceFlag) Set(v string) error {
	if v == "" {
		*n = ""
		return nil
	}
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return fmt.Errorf("%q is not a namespace name: %s", v, strings.Join(errs, "; "))
	}
	*n = namespaceFlag(v)
	return nil
}
