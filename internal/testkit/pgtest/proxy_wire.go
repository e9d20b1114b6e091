package pgtest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// The wire format of the protocol, as Proxy reads it: messages, startup
// packets and what a client's messages say of its statements.

// session is what the proxy knows of one connection's prepared statements
// and portals. Only the goroutine reading the client's messages uses it.
type session struct {
	statements map[string]string // statement name ("" for the unnamed one) → SQL
	portals    map[string]string // portal name → the SQL of its statement
}

// read interprets a client message: the SQL it executes, if it executes
// any, and whether it ends an exchange.
func (s *session) read(m message) (sql string, executes, ends bool, err error) {
	switch m.typ {
	case 'P': // Parse: statement name, SQL, parameter types
		f, err := cstrings(m.body, 2)
		if err != nil {
			return "", false, false, err
		}
		s.statements[f[0]] = f[1]
	case 'B': // Bind: portal name, statement name, parameters
		f, err := cstrings(m.body, 2)
		if err != nil {
			return "", false, false, err
		}
		s.portals[f[0]] = s.statements[f[1]]
	case 'C': // Close: 'S' or 'P', name
		if len(m.body) == 0 {
			return "", false, false, errors.New("pgtest: proxy: empty Close")
		}
		f, err := cstrings(m.body[1:], 1)
		if err != nil {
			return "", false, false, err
		}
		if m.body[0] == 'S' {
			delete(s.statements, f[0])
		} else {
			delete(s.portals, f[0])
		}
	case 'E': // Execute: portal name, row limit
		f, err := cstrings(m.body, 1)
		if err != nil {
			return "", false, false, err
		}
		return s.portals[f[0]], true, false, nil
	case 'Q': // Query: SQL
		f, err := cstrings(m.body, 1)
		if err != nil {
			return "", false, false, err
		}
		return f[0], true, true, nil
	case 'S', 'F': // Sync, FunctionCall
		return "", false, true, nil
	}
	return "", false, false, nil
}

// cstrings returns the first n NUL-terminated strings of b.
func cstrings(b []byte, n int) ([]string, error) {
	f := make([]string, n)
	for i := range f {
		end := bytes.IndexByte(b, 0)
		if end < 0 {
			return nil, errors.New("pgtest: proxy: unterminated string in a message")
		}
		f[i], b = string(b[:end]), b[end+1:]
	}
	return f, nil
}

// Length limits from PostgreSQL's source: MAX_STARTUP_PACKET_LENGTH, and
// MaxAllocSize for any message.
const (
	maxStartupPacket = 10000
	maxMessage       = 1<<30 - 1
)

// message is one typed message, as read.
type message struct {
	typ  byte
	body []byte // after the length
	raw  []byte // type, length and body, to forward as they came
}

// wire is one side of a pair, read a message at a time and written through
// a buffer that is flushed when the other side has nothing more buffered.
type wire struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	msg  bytes.Buffer // the last message read; grows with what arrives, not with what a length claims
}

func newWire(conn net.Conn) *wire {
	return &wire{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriter(conn)}
}

// message reads a typed message. It is valid until the next read.
func (w *wire) message() (message, error) {
	head, err := w.r.Peek(5)
	if err != nil {
		return message{}, err
	}
	n := int64(binary.BigEndian.Uint32(head[1:]))
	if n < 4 || n > maxMessage {
		return message{}, fmt.Errorf("pgtest: proxy: message %q of length %d", head[0], n)
	}
	if err := w.read(1 + n); err != nil {
		return message{}, err
	}
	raw := w.msg.Bytes()
	return message{typ: raw[0], body: raw[5:], raw: raw}, nil
}

// startupPacket reads an untyped packet: length, code, contents. It is
// valid until the next read.
func (w *wire) startupPacket() (code uint32, raw []byte, err error) {
	head, err := w.r.Peek(8)
	if err != nil {
		return 0, nil, err
	}
	n := int64(binary.BigEndian.Uint32(head))
	if n < 8 || n > maxStartupPacket {
		return 0, nil, fmt.Errorf("pgtest: proxy: startup packet of length %d", n)
	}
	code = binary.BigEndian.Uint32(head[4:])
	if err := w.read(n); err != nil {
		return 0, nil, err
	}
	return code, w.msg.Bytes(), nil
}

// read reads the next n bytes into w.msg.
func (w *wire) read(n int64) error {
	w.msg.Reset()
	got, err := io.CopyN(&w.msg, w.r, n)
	if got < n && err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// send writes b and flushes it, for the startup, where each packet waits for
// an answer.
func (w *wire) send(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	return w.w.Flush()
}
