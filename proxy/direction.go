package proxy

// side names one of a connection's two sockets.
type side uint8

const (
	sideClient   side = iota // the accepted socket
	sideUpstream             // the dialled one
)

// dir names one direction of a connection, by where its bytes go. Each
// direction is a flow: it reads its source socket and writes the other.
type dir uint8

const (
	toUpstream dir = iota // reads the client, writes the upstream
	toClient              // reads the upstream, writes the client
)

// other is the opposite direction.
func (d dir) other() dir { return 1 - d }

// src is the socket d reads; dst, the one it writes, is the other's src.
func (d dir) src() side {
	if d == toUpstream {
		return sideClient
	}
	return sideUpstream
}

func (d dir) dst() side { return d.other().src() }

// reader is the direction that reads s; its other() writes s.
func (s side) reader() dir {
	if s == sideClient {
		return toUpstream
	}
	return toClient
}
