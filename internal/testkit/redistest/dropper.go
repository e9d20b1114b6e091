package redistest

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Dropper loses replies the way a network that fails at the wrong moment
// does: its Dial, given to go-redis as Options.Dialer (or a ClusterClient's,
// for every node), wraps each connection, and once armed, lets the next
// command of one of the names it was armed with reach Redis, reads Redis's
// reply, and closes the connection instead of passing the reply on. Redis
// has run the command; the client gets an error, and sends it again if it
// resends. A NOSCRIPT reply, to a script Redis did not run, passes, and the
// Dropper stays armed for the EVAL that follows it. It is safe for
// concurrent use.
type Dropper struct {
	mu    sync.Mutex
	armed [][]byte // the RESP bulk strings of the commands' names, lower case; nil when disarmed
	// onDrop runs after a reply was dropped, before the client sees the
	// error: for a test to change the key in between, as another client
	// could.
	onDrop func()

	dropped atomic.Int64
}

// Dial dials addr and wraps the connection.
func (d *Dropper) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c, d: d}, nil
}

// Arm makes the Dropper drop the reply to the next command with one of
// names, such as "evalsha" and "eval", and run onDrop (if not nil) after it.
func (d *Dropper) Arm(onDrop func(), names ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = nil
	for _, name := range names {
		lower := strings.ToLower(name)
		d.armed = append(d.armed, []byte("\r\n$"+strconv.Itoa(len(lower))+"\r\n"+lower+"\r\n"))
	}
	d.onDrop = onDrop
}

// Dropped returns how many replies the Dropper has dropped.
func (d *Dropper) Dropped() int64 { return d.dropped.Load() }

// take reports whether p, a write of a client to Redis, holds an armed
// command, and if so disarms the Dropper and returns what it was armed
// with.
func (d *Dropper) take(p []byte) ([][]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed == nil {
		return nil, false
	}
	lower := bytes.ToLower(p)
	for _, name := range d.armed {
		if bytes.Contains(lower, name) {
			armed := d.armed
			d.armed = nil
			return armed, true
		}
	}
	return nil, false
}

// rearm arms the Dropper again with what take returned, unless it was
// armed since.
func (d *Dropper) rearm(armed [][]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed == nil {
		d.armed = armed
	}
}

type dropConn struct {
	net.Conn
	d     *Dropper
	mu    sync.Mutex
	armed [][]byte // what the Dropper was armed with, while the reply to what was written last is to go
}

func (c *dropConn) Write(p []byte) (int, error) {
	if armed, ok := c.d.take(p); ok {
		c.mu.Lock()
		c.armed = armed
		c.mu.Unlock()
	}
	return c.Conn.Write(p)
}

func (c *dropConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	armed := c.armed
	c.armed = nil
	c.mu.Unlock()
	if armed == nil {
		return c.Conn.Read(p)
	}
	// Wait for Redis's reply, so the command is known to have run, and
	// lose it; unless Redis did not have the script.
	n, err := c.Conn.Read(p)
	if bytes.HasPrefix(p[:n], []byte("-NOSCRIPT")) {
		c.d.rearm(armed)
		return n, err
	}
	c.Conn.Close()
	c.d.dropped.Add(1)
	c.d.mu.Lock()
	onDrop := c.d.onDrop
	c.d.mu.Unlock()
	if onDrop != nil {
		onDrop()
	}
	return 0, io.ErrUnexpectedEOF
}
