package storememory

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// Lease books cost units of a lease for key under alg (see store.Store.Lease),
// under the key's shard lock: it books as Reserve does for the token
// bucket and GCRA, and decides as Decide does for the fixed window. An
// admission makes a copy of the state it leaves the key's mark, which
// Reset puts back.
func (s *Store) Lease(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = storecheck.Now(now)
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, 0, err
	}
	if err := storecheck.Lease(alg, now, cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	return s.book(ctx, sk, &request{alg: alg, now: now, cost: cost}, maxWait, true)
}

// mark makes a copy of the entry c found, which the admission just kept,
// the mark of key (ns:key) under alg. Requires the write lock.
func (sh *shard) mark(c cursor, alg algorithms.Algorithm, key string, el time.Duration) {
	_, pos := c.t.find(c.h, c.ns, c.key)
	if pos < 0 {
		return
	}
	if sh.marks == nil {
		sh.marks = &markTable{}
	}
	sh.marks.keep(markKey{t: idOf(alg), key: key}, c.t.mark(pos, alg), el)
}

// A shard keeps, for each key and table a lease was booked on, a copy of
// the entry the latest admitted booking left: the key's mark, which a
// reset puts back in place of the entry (store.Store.Lease). A mark lasts as
// long as the entry it copies would have.

type markKey struct {
	t   tableID
	key string // ns:key
}

// mark is a copy of an entry: its state, which shares nothing with the
// entry's, when it stops counting (Unix nanoseconds), and from which second
// on the store's clock a sweep may drop it (see sweepAt).
type mark struct {
	state   algo.State
	expires int64
	sweep   uint32
}

// markTable is a shard's marks; its zero value is empty. It requires the
// write lock.
type markTable struct {
	m          map[markKey]mark
	sweepAfter int
}

// keep makes m k's mark. Marks that may be dropped at el go when the table
// has doubled since it last dropped them, and at the shard's sweeps.
func (mt *markTable) keep(k markKey, m mark, el time.Duration) {
	if mt.m == nil {
		mt.m = make(map[markKey]mark)
		mt.sweepAfter = minSweepOps
	}
	mt.m[k] = m
	if len(mt.m) >= mt.sweepAfter {
		mt.sweep(el)
	}
}

// sweep drops the marks that may be dropped at el. A nil table holds
// none.
func (mt *markTable) sweep(el time.Duration) {
	if mt == nil {
		return
	}
	for k, m := range mt.m {
		if m.gone(el) {
			delete(mt.m, k)
		}
	}
	mt.sweepAfter = max(2*len(mt.m), minSweepOps)
}

// find returns k's mark, unless a sweep may have dropped it by el. A nil
// table holds none.
func (mt *markTable) find(k markKey, el time.Duration) (mark, bool) {
	if mt == nil {
		return mark{}, false
	}
	m, ok := mt.m[k]
	if !ok || m.gone(el) {
		return mark{}, false
	}
	return m, true
}

// gone reports whether a sweep may drop the mark at el on the store's
// clock, as it may the entry it copies.
func (m mark) gone(el time.Duration) bool { return uint32(max(el, 0)/time.Second) >= m.sweep }

// mark returns a copy of the entry at pos, of an algorithm that packs as
// alg does: its state unpacked or cloned, so that later decisions on the
// entry leave it as it is.
func (t *table) mark(pos int, alg algorithms.Algorithm) mark {
	m := mark{expires: t.expires(pos), sweep: *t.sweepAt(pos)}
	if e := t.at(pos); e.w[0] == boxed {
		m.state = algo.Clone(alg, *t.box(pos, false))
	} else {
		m.state = algo.Unpack(t.packer, e.w, t.tag, nil)
	}
	return m
}

// put writes m, a mark, as the entry of c's key at the slot and position
// (-1 for none) find returned: packed if it packs as the table's entries
// do, boxed otherwise. The state is a clone, which the entry owns.
func (t *table) put(c *cursor, m mark) {
	pos := c.pos
	if pos < 0 {
		pos = t.insert(c.slot, c.h, c.ns, c.key)
	}
	state := algo.Clone(c.alg, m.state)
	*t.sweepAt(pos) = m.sweep
	if t.packer != nil {
		if w, tag, ok := algo.Pack(t.packer, state); t.packInto(pos, w, tag, ok) {
			return
		}
	}
	t.at(pos).w = algo.Words{boxed, m.expires}
	*t.box(pos, true) = state
}
