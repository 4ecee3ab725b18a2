package steady

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Kinds of operations.
const (
	KindDNS      = "dns"
	KindHTTP     = "http"
	KindDownload = "download"
)

// Result is the outcome of one operation of the client.
type Result struct {
	// At is when the operation started; Took how long it ran.
	At   time.Time     `json:"at"`
	Took time.Duration `json:"took"`
	// Kind is KindDNS, KindHTTP or KindDownload.
	Kind string `json:"kind"`
	Host string `json:"host"`
	// Addr is the DNS answer's first address, or the address HTTP dialled.
	Addr string `json:"addr,omitempty"`
	// Answers are every A record of a DNS answer.
	Answers []string `json:"answers,omitempty"`
	// Status is the HTTP status.
	Status int `json:"status,omitempty"`
	// Bytes and SHA256 describe a download's body.
	Bytes  int64  `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Reused says a keep-alive request went out on a connection an earlier
	// request had opened; Retries counts how often it was sent again on a
	// new one because the reused connection closed before any response
	// byte ([Tally.Retries]).
	Reused  bool `json:"reused,omitempty"`
	Retries int  `json:"retries,omitempty"`
	// Fail is why the operation failed at the client ("" when it got an
	// answer or a response): one of the Fail* values, or "other: ...".
	Fail string `json:"fail,omitempty"`
}

// What a client sees fail.
const (
	FailTimeout    = "timeout"
	FailRefused    = "refused"
	FailReset      = "reset"
	FailEmptyReply = "empty-reply"
	FailStatus     = "status"     // an HTTP status other than 200
	FailBody       = "wrong-body" // 200, but not the controller's answer for the host
	FailRcode      = "rcode"      // a DNS answer that is not NOERROR
	FailNoAnswer   = "no-answer"  // NOERROR without an A record
	FailNoAddress  = "no-address" // HTTP with no address ever resolved
)

// classify names a dial, write or read error the way a client reports it.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return FailReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return FailEmptyReply
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return FailTimeout
	}
	return "other: " + err.Error()
}
