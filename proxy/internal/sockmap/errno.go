package sockmap

import "golang.org/x/sys/unix"

// Errnos that mean "this kernel cannot": an unknown map or program type or
// attach type is EINVAL, a helper or feature compiled out ENOTSUPP (524).
var (
	errEINVAL   error = unix.EINVAL
	errENOTSUPP error = unix.Errno(524)
)
