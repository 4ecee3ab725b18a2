package rawsock

import "syscall"

// retry makes the raw system call in call, again while it reports EINTR.
// Every call here is on a non-blocking socket, or a pipe, and returns at
// once: the runtime's bookkeeping for a call that might block (entersyscall
// and exitsyscall) would cost more than the call, and a P the runtime sees
// in a system call for more than 20 µs, as a loopback connect or close can
// take, is one that sysmon takes away from the event loop and keeps itself
// awake for.
//
// The call is a closure so that each pointer argument is converted to
// uintptr in the syscall.RawSyscall6 call itself, the one place where
// unsafe.Pointer's rules keep the object alive and in place.
func retry(call func() (uintptr, uintptr, syscall.Errno)) (uintptr, error) {
	for {
		r, _, e := call()
		switch e {
		case 0:
			return r, nil
		case syscall.EINTR:
			continue
		}
		return r, e
	}
}

// Close closes fd. It is not retried: on Linux the descriptor is released
// even when close(2) reports EINTR, and another thread may already reuse it.
func Close(fd int) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(fd), 0, 0); e != 0 {
		return e
	}
	return nil
}

// Shutdown half-closes fd for writing: shutdown(2), SHUT_WR.
func Shutdown(fd int) error {
	_, err := retry(func() (uintptr, uintptr, syscall.Errno) {
		return syscall.RawSyscall(syscall.SYS_SHUTDOWN, uintptr(fd), syscall.SHUT_WR, 0)
	})
	return err
}
