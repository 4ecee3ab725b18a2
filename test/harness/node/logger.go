package node

import (
	"context"
	"fmt"

	"github.com/virtual-kubelet/virtual-kubelet/log"
)

// logger passes virtual-kubelet's warnings and errors to Config.Logf and
// drops the rest.
type logger struct {
	logf   func(string, ...any)
	fields string
}

// withLogger gives virtual-kubelet's code under ctx a logger writing to logf.
func withLogger(ctx context.Context, logf func(string, ...any)) context.Context {
	return log.WithLogger(ctx, &logger{logf: logf})
}

func (l *logger) out(level string, args ...any) {
	l.logf("virtual-kubelet %s: %s%s", level, fmt.Sprint(args...), l.fields)
}

func (l *logger) Debug(...any)                         {}
func (l *logger) Debugf(string, ...any)                {}
func (l *logger) Info(...any)                          {}
func (l *logger) Infof(string, ...any)                 {}
func (l *logger) Warn(args ...any)                     { l.out("warning", args...) }
func (l *logger) Warnf(f string, args ...any)          { l.out("warning", fmt.Sprintf(f, args...)) }
func (l *logger) Error(args ...any)                    { l.out("error", args...) }
func (l *logger) Errorf(f string, args ...any)         { l.out("error", fmt.Sprintf(f, args...)) }
func (l *logger) Fatal(args ...any)                    { l.out("fatal", args...) }
func (l *logger) Fatalf(f string, args ...any)         { l.out("fatal", fmt.Sprintf(f, args...)) }
func (l *logger) WithError(err error) log.Logger       { return l.with(fmt.Sprintf(" error=%v", err)) }
func (l *logger) WithField(k string, v any) log.Logger { return l.with(fmt.Sprintf(" %s=%v", k, v)) }

func (l *logger) WithFields(fs log.Fields) log.Logger {
	s := ""
	for k, v := range fs {
		s += fmt.Sprintf(" %s=%v", k, v)
	}
	return l.with(s)
}

func (l *logger) with(s string) log.Logger { return &logger{logf: l.logf, fields: l.fields + s} }
