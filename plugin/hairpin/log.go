package hairpin

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// klogRepeatWindow is how long an identical client-go error is held back:
// while the apiserver is down a reflector retries every second or so, and
// CoreDNS's log must not drown in the same line.
const klogRepeatWindow = 30 * time.Second

var klogOnce sync.Once

// silenceKlog routes client-go's klog output to CoreDNS's log: errors only,
// each distinct message at most once per klogRepeatWindow. Informational
// chatter is dropped. klog.InitFlags is not called: it panics on reload.
func silenceKlog() {
	klogOnce.Do(func() {
		klog.SetLogger(logr.New(&klogSink{last: map[string]time.Time{}}))
	})
}

type klogSink struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (s *klogSink) Init(logr.RuntimeInfo)          {}
func (s *klogSink) Enabled(int) bool               { return false }
func (s *klogSink) Info(int, string, ...any)       {}
func (s *klogSink) WithValues(...any) logr.LogSink { return s }
func (s *klogSink) WithName(string) logr.LogSink   { return s }

func (s *klogSink) Error(err error, msg string, kv ...any) {
	line := msg
	if err != nil {
		line = fmt.Sprintf("%s: %v", msg, err)
	}
	if len(kv) > 0 {
		line = fmt.Sprintf("%s %v", line, kv)
	}
	now := time.Now()
	s.mu.Lock()
	if t, ok := s.last[line]; ok && now.Sub(t) < klogRepeatWindow {
		s.mu.Unlock()
		return
	}
	if len(s.last) > 1000 {
		clear(s.last)
	}
	s.last[line] = now
	s.mu.Unlock()
	log.Errorf("kubernetes client: %s", line)
}
