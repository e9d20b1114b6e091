package store

import "errors"

// ErrMaybeDecided is wrapped, with ErrUnavailable or the caller's context
// error, when a request may have reached the store and its answer did not
// come back: a read timed out, the connection closed after the request was
// sent, the caller's deadline passed while it waited, or a client that
// resends failed on some attempt. The store may have decided it, and
// charged it. An error without it means nothing was decided.
//
// A request that carries a request ID (ratewise.WithRequestID) can be retried with
// the same ID: a store that applied it returns the first outcome, one that
// did not decides it now. Without an ID, retrying such a request may charge
// it twice.
var ErrMaybeDecided = errors.New("ratewise: request may have been decided")

// ErrInvalidRequestID is wrapped by the error a store returns for a request
// ID that is empty or longer than 128 bytes.
var ErrInvalidRequestID = errors.New("ratewise: invalid request ID")
