// Package evloop is a single-goroutine event loop on one epoll instance, the
// engine of the proxy's relay: descriptors are registered with a Handler,
// their events are delivered in batches on the loop's goroutine, other
// goroutines reach that goroutine with Post and Call, and a timer callback
// says when the loop must wake without events.
//
// It knows nothing of sockets or connections: what a descriptor is, and
// what its events mean, is the Handler's business.
//
// epoll(7): "The epoll API performs a similar task to poll(2): monitoring
// multiple file descriptors to see if I/O is possible on any of them." Each
// registration carries a token in the event's data (token.go), which says
// which Handler an event is for and whether that registration still exists.
package evloop
