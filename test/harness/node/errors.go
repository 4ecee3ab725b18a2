package node

import "errors"

// configError is a container that cannot be configured as specified:
// kubelet's CreateContainerConfigError.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// waitingReason is the waiting state of a container that could not be
// created, from what stopped it.
func waitingReason(err error) (reason, msg string) {
	var pull *errImagePull
	var conf *configError
	switch {
	case errors.As(err, &pull):
		return "ErrImagePull", err.Error()
	case errors.As(err, &conf):
		return "CreateContainerConfigError", err.Error()
	}
	return "CreateContainerError", err.Error()
}
