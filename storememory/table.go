package storememory

import (
	"hash/maphash"
	"math"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// table holds one algorithm's entries for one scope in one shard: the
// entries, dense at positions [0, n) in chunks, and an open-addressing index
// (linear probing) from a key's hash to its position. A decision finds its
// entry, or the empty slot a new one takes, with one probe sequence, and
// then updates the entry where it lies. find, at, box and expires require
// the shard's read lock; every other method, and any call that creates a
// box, its write lock.
//
// A Go map could do neither: it gives no pointer into its values, so an
// update is a lookup and an assignment, and a slot of a key and a boxed
// state, with the state's own allocation, cost a GCRA key 88 bytes, where
// an entry here is 32, plus 4 for when a sweep may drop it, a chunk's slack
// and 4 bytes per index slot.
type table struct {
	id tableID
	// packer keeps the states of algorithms that pack (algo.Packs)
	// inline; nil boxes every state. tag is the tag every packed entry
	// shares, once tagged; a state with another is boxed.
	packer algorithms.Algorithm
	tag    int64
	tagged bool
	// scratch is a state the table owns, for a packed entry to be unpacked
	// into, so that a decision on one allocates nothing; nil until a
	// decision leaves one spare.
	scratch algo.State
	seed    maphash.Seed

	// index slots are 0 when empty, and otherwise an entry's position plus
	// 1 in the low bits (below len(index), a power of 2) and its hash's
	// high bits above them, so that most probes that miss compare no key.
	// It is at most 4/5 full (see maxLoad).
	index  []uint32
	chunks []*chunk
	// boxes hold the boxed states, by position, in chunks made on first
	// use: a table whose states all pack has none.
	boxes []*[chunkSize]algo.State
	n     int
	// peak is the most entries the table held at a sweep since it was
	// last shrunk (see sweep).
	peak int
}

// chunkSize is how many entries a chunk holds: a chunk is one allocation
// of 1,152 bytes, so a table's slack is at most two chunks and entries
// never move when a table grows.
const chunkSize = 32

// chunk holds entries and, apart so that an entry stays 32 bytes, the
// second on the store's own clock from which a sweep may drop each (see
// sweepAt).
type chunk struct {
	e     [chunkSize]entry
	sweep [chunkSize]uint32
}

// entry is a key and its state: packed (algo.Packs), where w[0] >= 0
// is the microsecond it stops counting from, or boxed, where w[0] is boxed
// and w[1] the Unix nanosecond it stops counting at.
type entry struct {
	// key is the caller's key, or ns:key joined when the entry was made.
	key string
	w   algo.Words
}

const (
	boxed = -1
	// maxPacked is the latest microsecond a packed state may stop counting
	// at and still be a time in nanoseconds; later (no valid state is) it is
	// boxed.
	maxPacked = math.MaxInt64 / 1000
	minIndex  = 8
)

// underLoad reports whether an index of size slots may hold n entries: at
// most 4/5 full. Probe runs stay short there, as slots are 4 bytes (16 to a
// cache line) and carry enough of the hash that a probe rarely compares a
// key, while at 3/4 a shard's 390 keys of 100,000 would need 1,024 slots
// rather than 512.
func underLoad(n, size int) bool { return 5*n <= 4*size }

func newTable(id tableID, alg algorithms.Algorithm, seed maphash.Seed) *table {
	t := &table{id: id, seed: seed, index: make([]uint32, minIndex)}
	if algo.Packs(alg) {
		t.packer = alg
	}
	return t
}

func (t *table) at(pos int) *entry { return &t.chunks[pos/chunkSize].e[pos%chunkSize] }

// sweepAt returns where the second from which a sweep may drop the entry
// at pos is kept (see Store.sweepAt).
func (t *table) sweepAt(pos int) *uint32 { return &t.chunks[pos/chunkSize].sweep[pos%chunkSize] }

// box returns where the boxed state at pos is held, making its chunk if
// create is set; nil if it has none.
func (t *table) box(pos int, create bool) *algo.State {
	c := pos / chunkSize
	if c >= len(t.boxes) || t.boxes[c] == nil {
		if !create {
			return nil
		}
		for len(t.boxes) <= c {
			t.boxes = append(t.boxes, nil)
		}
		t.boxes[c] = new([chunkSize]algo.State)
	}
	return &t.boxes[c][pos%chunkSize]
}

// matches reports whether key is the key ns:rest (store.Key.String).
func matches(key, ns, rest string) bool {
	if ns == "" {
		return key == rest
	}
	return len(key) == len(ns)+1+len(rest) && key[:len(ns)] == ns && key[len(ns)] == ':' && key[len(ns)+1:] == rest
}

// find returns the index slot of the entry for ns:key, whose hash is h,
// and its position; if there is none, the empty slot a new entry takes
// (see insert) and -1.
func (t *table) find(h uint64, ns, key string) (slot, pos int) {
	mask := uint32(len(t.index) - 1)
	high := uint32(h>>32) &^ mask
	for i := uint32(h>>8) & mask; ; i = (i + 1) & mask {
		s := t.index[i]
		if s == 0 {
			return int(i), -1
		}
		if s&^mask == high {
			p := int(s&mask) - 1
			if matches(t.at(p).key, ns, key) {
				return int(i), p
			}
		}
	}
}

// slotOf returns the index slot of the entry at pos, whose hash is h.
func (t *table) slotOf(h uint64, pos int) int {
	mask := uint32(len(t.index) - 1)
	for i := uint32(h>>8) & mask; ; i = (i + 1) & mask {
		if t.index[i]&mask == uint32(pos+1) {
			return int(i)
		}
	}
}

func (t *table) hashAt(pos int) uint64 { return maphash.String(t.seed, t.at(pos).key) }

// insert makes an entry for ns:key, whose hash is h, at slot, the empty
// slot find returned, and returns its position.
func (t *table) insert(slot int, h uint64, ns, key string) int {
	if !underLoad(t.n+1, len(t.index)) {
		t.reindex(2 * len(t.index))
		slot, _ = t.find(h, ns, key)
	}
	pos := t.n
	if pos == len(t.chunks)*chunkSize {
		t.chunks = append(t.chunks, new(chunk))
	}
	if ns != "" {
		key = ns + ":" + key // once per entry; decisions compare the parts
	}
	*t.at(pos) = entry{key: key}
	mask := uint32(len(t.index) - 1)
	t.index[slot] = uint32(h>>32)&^mask | uint32(pos+1)
	t.n++
	return pos
}

// reindex rebuilds the index with size slots.
func (t *table) reindex(size int) {
	t.index = make([]uint32, size)
	mask := uint32(size - 1)
	for pos := range t.n {
		h := t.hashAt(pos)
		i := uint32(h>>8) & mask
		for t.index[i] != 0 {
			i = (i + 1) & mask
		}
		t.index[i] = uint32(h>>32)&^mask | uint32(pos+1)
	}
}

// remove drops the entry at pos, whose index slot is slot; the last entry
// takes its position.
func (t *table) remove(slot, pos int) {
	mask := uint32(len(t.index) - 1)
	// Backward shift: later slots of the probe run move up unless that
	// would put them before their home slot.
	i := uint32(slot)
	for j := (i + 1) & mask; t.index[j] != 0; j = (j + 1) & mask {
		home := uint32(t.hashAt(int(t.index[j]&mask)-1)>>8) & mask
		if (j-home)&mask >= (j-i)&mask {
			t.index[i] = t.index[j]
			i = j
		}
	}
	t.index[i] = 0
	last := t.n - 1
	if pos != last {
		ls := t.slotOf(t.hashAt(last), last)
		t.index[ls] = t.index[ls]&^mask | uint32(pos+1)
		*t.at(pos) = *t.at(last)
		*t.sweepAt(pos) = *t.sweepAt(last)
		var moved algo.State
		if b := t.box(last, false); b != nil {
			moved = *b
		}
		if b := t.box(pos, moved != nil); b != nil {
			*b = moved
		}
	}
	// Cleared, so that neither the caller's key nor a state stays reachable.
	*t.at(last) = entry{}
	if b := t.box(last, false); b != nil {
		*b = nil
	}
	t.n--
	// A chunk is freed once two lie empty, so that one key coming and
	// going at a boundary does not make and free a chunk each time.
	if c := len(t.chunks) - 2; c > 0 && t.n <= c*chunkSize {
		t.chunks[c+1] = nil
		t.chunks = t.chunks[:c+1]
		if len(t.boxes) > c+1 {
			t.boxes[c+1] = nil
			t.boxes = t.boxes[:c+1]
		}
	}
}

// expires returns the Unix nanosecond the entry at pos stops counting at.
// A packed state stops counting at a whole microsecond: its decision's
// now plus ResetAfter, less the nanoseconds of that now.
func (t *table) expires(pos int) int64 {
	e := t.at(pos)
	if e.w[0] == boxed {
		return e.w[1]
	}
	return e.w[0] * 1000
}

// state returns the state at pos (-1 for none) if it still counts at now
// (Unix nanoseconds), or nil. A packed state is unpacked into the table's
// scratch state, which the caller must not keep past the lock.
func (t *table) state(pos int, now int64) algo.State {
	if pos < 0 || t.expires(pos) <= now {
		return nil
	}
	e := t.at(pos)
	if e.w[0] == boxed {
		return *t.box(pos, false)
	}
	t.scratch = algo.Unpack(t.packer, e.w, t.tag, t.scratch)
	return t.scratch
}

// keep records the state a decision of c's algorithm at now (Unix
// nanoseconds), el after the store's start, left for c's key at the slot
// and position (-1 for none) find returned; it counts for
// keptFor(res, now), or longer if it has no packed form and alg's Pack
// says so (algo.Packer), and a sweep may drop it from that time on
// the store's clock (sweepAt).
func (t *table) keep(c *cursor, state algo.State, res algorithms.Result, now int64, el time.Duration) {
	slot, pos := c.slot, c.pos
	if state == nil {
		if pos >= 0 {
			t.remove(slot, pos)
		}
		return
	}
	if pos < 0 {
		pos = t.insert(slot, c.h, c.ns, c.key)
	}
	life := keptFor(&res, now)
	e := t.at(pos)
	if t.packer != nil {
		w, tag, ok := algo.Pack(t.packer, state)
		if t.packInto(pos, w, tag, ok) {
			if t.scratch == nil {
				t.scratch = state // packed, it is the table's to reuse
			}
			*t.sweepAt(pos) = sweepAt(el, life)
			return
		}
		if !ok {
			// How long the state counts may depend on the limit that
			// decided, not only on the Kind and Scope the table's packer
			// shares with it.
			if algo.Packs(c.alg) {
				w, _, _ = algo.Pack(c.alg, state)
			}
			if w[0] > 0 {
				life = max(life, time.Duration(min(w[0], maxPacked)*1000-now))
			}
		}
	}
	*t.sweepAt(pos) = sweepAt(el, life)
	if state == t.scratch {
		t.scratch = nil // the box owns it now
	}
	e.w = algo.Words{boxed, now + int64(life)}
	*t.box(pos, true) = state
}

// packInto writes w, tag, what algo.Pack returned (ok) for a state, as the
// packed entry at pos, and reports whether it could: the state packs, with
// the tag the table's packed entries share, and stops counting at a time
// a packed entry holds.
func (t *table) packInto(pos int, w algo.Words, tag int64, ok bool) bool {
	if !ok || t.tagged && tag != t.tag || w[0] < 0 || w[0] > maxPacked {
		return false
	}
	t.tag, t.tagged = tag, true
	t.at(pos).w = w
	if b := t.box(pos, false); b != nil {
		*b = nil
	}
	return true
}

// stepPacked decides r, a request of cost >= 1, on the packed entry
// at c's position, or on none (-1), into res, and writes its state in place, as keep would, with
// algo.DecidePacked: no state is unpacked, so nothing is allocated. ok is
// false, with nothing written, when it cannot: the table boxes its states,
// the entry is boxed, or the state left has no packed form or another tag;
// the caller then decides as Decide does. Requires the write lock.
func (t *table) stepPacked(c *cursor, r *request, res *algorithms.Result) (ok bool) {
	pos, alg, now, tn, el, cost := c.pos, r.alg, r.now, r.t, r.el, r.cost
	if t.packer == nil {
		return false
	}
	var w algo.Words
	has := false
	if pos >= 0 {
		e := t.at(pos)
		if e.w[0] == boxed {
			return false
		}
		// As state: a state stops counting at its expiry.
		w, has = e.w, e.w[0]*1000 > tn
	}
	var in *algo.Words
	if has {
		in = &w
	}
	nw, tag, ok := algo.DecidePacked(alg, &r.checked.derived, in, t.tag, now, cost, res)
	if !ok || t.tagged && tag != t.tag || nw[0] < 0 || nw[0] > maxPacked {
		return false
	}
	if has && cost == 1 && !res.Allowed && nw == w && tag == t.tag {
		// A denial of cost 1 that converted nothing: not remembered (see
		// cursor.keep).
		return true
	}
	if pos < 0 {
		pos = t.insert(c.slot, c.h, c.ns, c.key)
	}
	t.tag, t.tagged = tag, true
	t.at(pos).w = nw
	if b := t.box(pos, false); b != nil {
		*b = nil
	}
	*t.sweepAt(pos) = sweepAt(el, keptFor(res, tn))
	return true
}

// keptFor is how long after now (Unix nanoseconds) the state a decision
// left must be kept: while it counts, ResetAfter, and at least until the
// decision's time, At, which a decision made with an earlier clock reading
// is made at: a state that counts nothing may still hold a later time than
// now (the latest a log was decided at, a fixed window's start), and a
// stale reading must still find it.
func keptFor(res *algorithms.Result, now int64) time.Duration {
	return max(res.ResetAfter, time.Duration(res.At.UnixNano()-now))
}

// replace puts state in place of a boxed entry's state, keeping its
// expiry; a packed entry is left as it is.
func (t *table) replace(pos int, state algo.State) {
	if t.at(pos).w[0] != boxed || state == nil {
		return
	}
	if state == t.scratch {
		t.scratch = nil // the box owns it now
	}
	*t.box(pos, true) = state
}

// sweep drops the entries that a sweep may drop from second cutoff on the
// store's clock or earlier, and shrinks a table left mostly empty.
func (t *table) sweep(cutoff uint32) {
	t.peak = max(t.peak, t.n)
	packed := 0
	// Downwards, so that the entry that takes a dropped one's position has
	// been looked at.
	for pos := t.n - 1; pos >= 0; pos-- {
		switch {
		case *t.sweepAt(pos) <= cutoff:
			t.remove(t.slotOf(t.hashAt(pos), pos), pos)
		case t.at(pos).w[0] != boxed:
			packed++
		}
	}
	if packed == 0 {
		// States written under another tag, as after a limit's rate count
		// changed, pack again from their next write.
		t.tagged = false
	}
	// Entries stay dense and empty chunks go as entries do, but the index
	// and the chunk lists only grow: a table that once held many more keys
	// than it holds now, even if they went over several sweeps, gets ones
	// of its present size, so memory comes back after a wave of keys has
	// passed.
	if t.peak >= minShrink && t.n <= t.peak/4 {
		size := minIndex
		for !underLoad(t.n, size) {
			size *= 2
		}
		t.reindex(size)
		t.chunks = append([]*chunk(nil), t.chunks...)
		if t.boxes != nil {
			t.boxes = append([]*[chunkSize]algo.State(nil), t.boxes...)
		}
		t.peak = t.n
	}
}
