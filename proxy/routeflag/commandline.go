package routeflag

import (
	"errors"
	"strings"
)

// The flag and its environment twin, as hairpin-proxy defines them.
const (
	// Name is the flag's name: --route, or -route, with its value after "="
	// or as the next argument.
	Name = "route"
	// EnvPrefix starts the environment twin of every flag of the command.
	EnvPrefix = "HAIRPIN_PROXY_"
	// Env is the route flag's environment twin. It holds routes separated
	// by whitespace, and is read only when no route flag is given.
	Env = EnvPrefix + "ROUTE"
)

// boolFlags are the command's flags that take no value, so that the
// argument after one is not read as its value. A test holds this list and
// the command's flags in step.
var boolFlags = map[string]bool{"version": true}

// IsBoolFlag reports whether the command's flag name takes no value.
func IsBoolFlag(name string) bool { return boolFlags[name] }

// FromContainer returns the routes a hairpin-proxy container serves, read
// as the command reads them: command and args as in a container's spec
// (command[0], when given, is the program; without a command the image's
// entrypoint is), and env its environment by name (nil for none). An
// environment variable set from a ConfigMap or Secret is not known here;
// env returns what it can. The routes that parse are returned, and the
// error joins why the others do not.
func FromContainer(command, args []string, env func(string) (string, bool)) ([]Route, error) {
	var argv []string
	if len(command) > 0 {
		argv = append(argv, command[1:]...)
	}
	argv = append(argv, args...)
	values, given := flagValues(argv)
	if !given && env != nil {
		if v, ok := env(Env); ok {
			values = strings.Fields(v)
		}
	}
	var routes []Route
	var errs []error
	for _, v := range values {
		r, err := Parse(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		routes = append(routes, r)
	}
	return routes, errors.Join(errs...)
}

// flagValues returns the values of the route flag in args, read as Go's
// flag package reads a command line: "-name" and "--name" alike, the value
// after "=" or as the next argument (unless the flag takes none), up to
// "--" or the first argument that is not a flag.
func flagValues(args []string) (values []string, given bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !hasValue && !IsBoolFlag(name) && i+1 < len(args) {
			i++
			value, hasValue = args[i], true
		}
		if name == Name && hasValue {
			values = append(values, value)
			given = true
		}
	}
	return values, given
}
