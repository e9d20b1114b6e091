package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Proxy is a TCP proxy for the PostgreSQL wire protocol, for tests that need
// the network between a client and the server to fail at a chosen moment. It
// is the PostgreSQL counterpart of redistest.Dropper, and serves two kinds
// of tests:
//
//   - Lost replies. LoseNext arms the proxy: the next exchange that executes
//     SQL containing a pattern reaches the server, the proxy reads the whole
//     reply, up to its ReadyForQuery, so the statement is known to have run
//     (and, outside a transaction block, committed), and then closes the
//     client's connection instead of passing the reply on. The client gets
//     an error for a statement that took effect, as it would if the network
//     failed at the worst moment.
//   - A silent server. Stall makes the proxy stop forwarding in both
//     directions, on every connection, new ones included, without closing
//     anything, as a server or network that goes quiet would; Resume
//     forwards what was held and carries on.
//
// Each client connection gets its own connection to the server. An
// exchange is what a client sends up to and including a Sync, or one
// simple Query (or FunctionCall), and the server's reply to it, which ends
// with a ReadyForQuery. The proxy reads messages only far enough to know
// their boundaries and which SQL each Execute runs: pgx, like most drivers,
// sends a statement's SQL in a Parse once per connection and later only
// Binds the statement's name, so the proxy keeps, per connection, the SQL of
// each statement and portal.
//
// SSLRequest and GSSENCRequest are forwarded; if the server accepts
// encryption, the proxy copies that connection's bytes without reading
// them, so LoseNext and Executed do not see it (pgtest's servers refuse
// encryption). A CancelRequest, which a client sends on a new connection, is
// forwarded like any other connection's bytes, and so is held while the
// proxy is stalled, as it would be by a silent network.
//
// A message the proxy cannot read closes its connection and the server's.
// The proxy stops when the test ends, closing every connection and waiting
// for its goroutines. It is safe for concurrent use.
type Proxy struct {
	t        testing.TB
	ln       net.Listener
	upstream string
	ctx      context.Context // ends dials to the server when the proxy closes
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the accept loop and every connection's goroutines

	mu        sync.Mutex
	closed    bool
	pairs     map[*pair]struct{}
	held      chan struct{} // closed by Resume; nil when the proxy is not stalled
	armed     bool
	patterns  []string // what LoseNext armed the proxy with
	lostAtArm int64    // lost when LoseNext armed the proxy
	lost      int64
	executed  map[string]int64 // SQL → how many Executes or Queries of it were forwarded
}

// NewProxy starts a proxy on a free loopback port to the server at
// upstreamAddr, a "host:port" such as "127.0.0.1:5433", and stops it when
// t ends.
func NewProxy(t testing.TB, upstreamAddr string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: proxy: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		t: t, ln: ln, upstream: upstreamAddr, ctx: ctx, cancel: cancel,
		pairs:    make(map[*pair]struct{}),
		executed: make(map[string]int64),
	}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's "host:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns serverURL, a postgres:// URL such as Server.URL, with its host
// and port replaced by the proxy's.
func (p *Proxy) URL(serverURL string) string {
	p.t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		p.t.Fatalf("pgtest: proxy: %v", err)
	}
	u.Host = p.Addr()
	return u.String()
}

// LoseNext arms the proxy to lose the reply to the next exchange that
// executes SQL containing one of patterns. Exchanges that do not match
// pass while it is armed. One reply is lost per call.
func (p *Proxy) LoseNext(patterns ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.patterns, p.lostAtArm = true, patterns, p.lost
}

// Disarm disarms the proxy and reports whether it lost a reply since
// LoseNext. A reply is counted lost before the client's connection closes,
// so a client that got its error can call Disarm at once.
func (p *Proxy) Disarm() (lost bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = false
	return p.lost > p.lostAtArm
}

// Lost returns how many replies the proxy has lost.
func (p *Proxy) Lost() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// Executed returns how many Executes and simple Queries whose SQL contains
// pattern the proxy has forwarded to the server. pgxpool's liveness check of
// a connection idle for over a second is a simple Query "-- ping".
func (p *Proxy) Executed(pattern string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for sql, count := range p.executed {
		if strings.Contains(sql, pattern) {
			n += count
		}
	}
	return n
}

// Stall stops forwarding on every connection, and on connections accepted
// later, until Resume. Nothing is closed or dropped.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Resume forwards what Stall held and carries on.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// close stops accepting, closes every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) close() {
	p.cancel()
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.pairs {
		c.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed, or out of file descriptors: the test fails on its own
		}
		if c := p.register(client); c != nil {
			go p.serve(c)
		}
	}
}

// register tracks a new client connection, unless the proxy is closed.
func (p *Proxy) register(client net.Conn) *pair {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		client.Close()
		return nil
	}
	c := &pair{client: newWire(client), done: make(chan struct{})}
	p.pairs[c] = struct{}{}
	p.wg.Add(1) // before close's Wait, which runs after closed is set
	return c
}

// serve connects c's client to the server and forwards between them until
// either side closes or sends what the proxy cannot read.
func (p *Proxy) serve(c *pair) {
	defer p.wg.Done()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.pairs, c)
		p.mu.Unlock()
	}()
	// Dialled only once the proxy forwards, so that a stall holds even
	// the server's view of a new connection.
	if !p.wait(c) {
		return
	}
	var d net.Dialer
	conn, err := d.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil || !c.setServer(conn) {
		return
	}
	typed, err := p.startup(c)
	if err != nil {
		return
	}
	if !typed {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.copyRaw(c, c.client, c.server) }()
		p.copyRaw(c, c.server, c.client)
		return
	}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.fromServer(c) }()
	p.fromClient(c)
}

// Startup packet codes, which take the place of a message type before the
// StartupMessage.
const (
	cancelRequestCode = 80877102
	sslRequestCode    = 80877103
	gssencRequestCode = 80877104
	protocolMajor3    = 3 // a StartupMessage's code is the protocol version, major<<16 | minor
)

// startup forwards the untyped packets that open a connection: SSLRequest
// and GSSENCRequest, each answered with one byte, until a StartupMessage,
// after which both sides send typed messages (typed is true), or a
// CancelRequest or accepted encryption, after which the proxy only copies
// bytes (typed is false).
func (p *Proxy) startup(c *pair) (typed bool, err error) {
	for {
		code, raw, err := c.client.startupPacket()
		if err != nil {
			return false, err
		}
		if !p.wait(c) {
			return false, errClosed
		}
		switch {
		case code == cancelRequestCode:
			return false, c.server.send(raw)
		case code>>16 == protocolMajor3:
			c.mark(false, true) // the startup ends with a ReadyForQuery too
			return true, c.server.send(raw)
		case code != sslRequestCode && code != gssencRequestCode:
			return false, fmt.Errorf("pgtest: proxy: unknown startup code %d", code)
		}
		if err := c.server.send(raw); err != nil {
			return false, err
		}
		answer, err := c.server.r.ReadByte()
		if err != nil {
			return false, err
		}
		if !p.wait(c) {
			return false, errClosed
		}
		if err := c.client.send([]byte{answer}); err != nil {
			return false, err
		}
		if answer != 'N' { // 'S' or 'G': encrypted from here on
			return false, nil
		}
	}
}

var errClosed = errors.New("pgtest: proxy: connection closed")

// fromClient forwards c's client's messages to the server, marking the
// exchange whose reply is to be lost before the server can see it.
func (p *Proxy) fromClient(c *pair) {
	defer c.close()
	s := session{statements: map[string]string{}, portals: map[string]string{}}
	for {
		m, err := c.client.message()
		if err != nil || !p.wait(c) {
			return
		}
		sql, executes, ends, err := s.read(m)
		if err != nil {
			return
		}
		c.mark(executes && p.take(sql), ends)
		if _, err := c.server.w.Write(m.raw); err != nil {
			return
		}
		if executes {
			p.count(sql)
		}
		if c.client.r.Buffered() == 0 && c.server.w.Flush() != nil {
			return
		}
	}
}

// fromServer forwards the server's messages to c's client, except the
// reply of an exchange that is to be lost, which it reads up to its
// ReadyForQuery and then closes c instead of passing on.
func (p *Proxy) fromServer(c *pair) {
	defer c.close()
	for {
		m, err := c.server.message()
		if err != nil || !p.wait(c) {
			return
		}
		lose, last, err := c.reply(m.typ)
		switch {
		case err != nil:
			return
		case lose && last:
			p.recordLost() // before the client can see its connection close
			return
		case !lose:
			if _, err := c.client.w.Write(m.raw); err != nil {
				return
			}
		}
		if c.server.r.Buffered() == 0 && c.client.w.Flush() != nil {
			return
		}
	}
}

// copyRaw copies bytes from src to dst, for connections the proxy cannot or
// need not read.
func (p *Proxy) copyRaw(c *pair, dst, src *wire) {
	defer c.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.r.Read(buf)
		if n > 0 {
			if !p.wait(c) {
				return
			}
			if _, err := dst.conn.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait returns when the proxy is not stalled, true, or when c is closed,
// false.
func (p *Proxy) wait(c *pair) bool {
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if held == nil {
		select {
		case <-c.done:
			return false
		default:
			return true
		}
	}
	select {
	case <-held:
		return true
	case <-c.done:
		return false
	}
}

// take reports whether the proxy is armed with a pattern that sql
// contains, and if so disarms it, so that one reply is lost per arming.
func (p *Proxy) take(sql string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed || !slices.ContainsFunc(p.patterns, func(pattern string) bool { return strings.Contains(sql, pattern) }) {
		return false
	}
	p.armed = false
	return true
}

func (p *Proxy) count(sql string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.executed[sql]++
}

func (p *Proxy) recordLost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lost++
}

// pair is a client connection and the server connection the proxy opened
// for it.
type pair struct {
	client *wire
	server *wire         // nil until dialled; set once, before either pump starts
	done   chan struct{} // closed by close

	mu     sync.Mutex
	closed bool
	// Whether each exchange's reply is to be lost: sending for the exchange
	// the client is sending, sent for those it has sent in full, whose
	// ReadyForQuery has not come, oldest first.
	sending bool
	sent    []bool
}

// setServer gives c its server connection, or closes conn and returns false
// if c is closed.
func (c *pair) setServer(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		conn.Close()
		return false
	}
	c.server = newWire(conn)
	return true
}

func (c *pair) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.done)
	c.client.conn.Close()
	if c.server != nil {
		c.server.conn.Close()
	}
}

// mark records a client message, before it is forwarded: whether its
// exchange's reply is to be lost, and whether it ends the exchange.
func (c *pair) mark(lose, ends bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sending = c.sending || lose
	if ends {
		c.sent = append(c.sent, c.sending)
		c.sending = false
	}
}

// reply reports whether a server message of type typ belongs to a reply to
// be lost, and whether it ends that reply.
func (c *pair) reply(typ byte) (lose, last bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lose = c.sending // a message before the client's Sync, after a Flush
	if len(c.sent) > 0 {
		lose = c.sent[0]
	}
	if typ != 'Z' {
		return lose, false, nil
	}
	if len(c.sent) == 0 {
		return false, false, errors.New("pgtest: proxy: ReadyForQuery with no exchange sent")
	}
	c.sent = c.sent[1:]
	return lose, true, nil
}
