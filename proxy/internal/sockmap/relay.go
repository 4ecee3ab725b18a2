package sockmap

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// ErrUnsupported is wrapped by the error Open returns when the kernel lacks
// sockhash or SK_SKB support, or the process lacks the privileges to load
// BPF programs (CAP_BPF and CAP_NET_ADMIN). The caller is expected to fall
// back to the userspace relay.
var ErrUnsupported = errors.New("in-kernel relay unsupported")

// ErrClosed is returned by Splice after Close.
var ErrClosed = errors.New("in-kernel relay closed")

// DefaultMaxPairs is the number of connections Open sizes its maps for when
// Options.MaxPairs is 0.
const DefaultMaxPairs = 65536

// Options configure Open.
type Options struct {
	// MaxPairs bounds the connections relayed at once; Splice fails beyond
	// it. The maps hold two entries per connection.
	MaxPairs int
}

// Relay owns the BPF maps and the verdict program. It is safe for
// concurrent use.
type Relay struct {
	peers    *ebpf.Map // sockhash: own cookie -> peer socket
	counters *ebpf.Map // hash: own cookie -> counter
	hold     *ebpf.Map // hash: own cookie -> 1 while userspace relays it
	prog     *ebpf.Program

	mu     sync.Mutex
	closed bool
	pairs  map[*Pair]struct{}
	copies int       // Copy calls running; Close waits for 0
	idle   sync.Cond // on mu: copies reached 0
}

// Open creates the maps, loads the verdict program and attaches it to the
// sockhash. Any error means the relay cannot be used; it wraps
// ErrUnsupported when the cause is missing kernel support or privileges.
func Open(opts Options) (*Relay, error) {
	n := opts.MaxPairs
	if n <= 0 {
		n = DefaultMaxPairs
	}
	if n > 1<<30 {
		return nil, fmt.Errorf("sockmap: MaxPairs %d: too large", n)
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK; later ones
	// to the cgroup, and this is a no-op. Without privileges it fails
	// whatever the kernel; then the map creation below says why.
	memlockErr := rlimit.RemoveMemlock()
	r := &Relay{pairs: make(map[*Pair]struct{})}
	r.idle.L = &r.mu

	var err error
	if r.peers, err = ebpf.NewMap(sockhashSpec(uint32(2 * n))); err != nil {
		if memlockErr != nil {
			err = fmt.Errorf("%w (and RLIMIT_MEMLOCK: %w)", err, memlockErr)
		}
		return nil, unsupported("create sockhash", err)
	}
	if r.counters, err = ebpf.NewMap(countersSpec(uint32(2 * n))); err != nil {
		r.closeMaps()
		return nil, unsupported("create counter map", err)
	}
	if r.hold, err = ebpf.NewMap(holdSpec(uint32(2 * n))); err != nil {
		r.closeMaps()
		return nil, unsupported("create hold map", err)
	}
	if r.prog, err = ebpf.NewProgram(verdictSpec(r.peers, r.counters, r.hold)); err != nil {
		r.closeMaps()
		return nil, unsupported("load SK_SKB verdict program", err)
	}
	if err := link.RawAttachProgram(r.attachOptions()); err != nil {
		_ = r.prog.Close()
		r.closeMaps()
		return nil, unsupported("attach stream verdict to sockhash", err)
	}
	return r, nil
}

func (r *Relay) attachOptions() link.RawAttachProgramOptions {
	return link.RawAttachProgramOptions{
		Target:  r.peers.FD(),
		Program: r.prog,
		Attach:  ebpf.AttachSkSKBStreamVerdict,
	}
}

// unsupported wraps err, and ErrUnsupported when err says the kernel or the
// process cannot do what was asked.
func unsupported(what string, err error) error {
	if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, os.ErrPermission) ||
		errors.Is(err, errEINVAL) || errors.Is(err, errENOTSUPP) {
		return fmt.Errorf("sockmap: %s: %w: %w", what, ErrUnsupported, err)
	}
	return fmt.Errorf("sockmap: %s: %w", what, err)
}

func (r *Relay) closeMaps() {
	if r.peers != nil {
		_ = r.peers.Close()
	}
	if r.counters != nil {
		_ = r.counters.Close()
	}
	if r.hold != nil {
		_ = r.hold.Close()
	}
}

// Close aborts the pairs still open (spliced ones with reason ReasonClosed;
// attached ones have both sockets closed), waits for the spliced ones,
// detaches the program and frees the maps.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	open := make([]*Pair, 0, len(r.pairs))
	for p := range r.pairs {
		open = append(open, p)
	}
	r.mu.Unlock()
	for _, p := range open {
		p.Abort(ReasonClosed)
		if done := p.Done(); done != nil {
			<-done
		}
	}
	// The maps go only once no Copy can touch them; closing the sockets
	// above makes every Copy return promptly.
	r.mu.Lock()
	for r.copies > 0 {
		r.idle.Wait()
	}
	r.mu.Unlock()
	err := link.RawDetachProgram(link.RawDetachProgramOptions(r.attachOptions()))
	_ = r.prog.Close()
	r.closeMaps()
	if err != nil {
		return fmt.Errorf("sockmap: detach: %w", err)
	}
	return nil
}

// Pairs is the number of connections being relayed.
func (r *Relay) Pairs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pairs)
}

func (r *Relay) add(p *Pair) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.pairs[p] = struct{}{}
	return nil
}

func (r *Relay) remove(p *Pair) {
	r.mu.Lock()
	delete(r.pairs, p)
	r.mu.Unlock()
}

// Entries counts the entries of the relay's maps: two per pair in the
// sockhash and the counters, one per held direction. Zero with no pair open
// means nothing leaked.
func (r *Relay) Entries() (int, error) {
	n := 0
	for _, m := range []*ebpf.Map{r.peers, r.counters, r.hold} {
		var k uint64
		it := m.Iterate()
		for it.Next(&k, nil) {
			n++
		}
		if err := it.Err(); err != nil {
			return n, fmt.Errorf("sockmap: count entries: %w", err)
		}
	}
	return n, nil
}

// enter registers a Copy call; false once the relay is closed.
func (r *Relay) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.copies++
	return true
}

func (r *Relay) leave() {
	r.mu.Lock()
	r.copies--
	if r.copies == 0 {
		r.idle.Broadcast()
	}
	r.mu.Unlock()
}
