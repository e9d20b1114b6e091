package storememory

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/internal/storecheck"
)

// Request IDs (ratewise.WithRequestID): a shard remembers each admission made
// with an ID, under the write lock that decides it, for as long as what it
// charged counts (its ResetAfter, plus a second) on the store's own clock
// (see Store.elapsed), and answers a request with the same ID from there.

// onceOp tells apart what one ID may be applied to on one state: a
// decision (Decide, Reserve), a set's decision, a refund and a reset.
type onceOp uint8

const (
	onceDecide onceOp = iota
	onceSet
	onceRefund
	onceReset
)

type onceKey struct {
	t   tableID // the algorithm's, or a set's first algorithm's
	op  onceOp
	key string // ns:key
	id  string
}

// onceRecord is what the first admission returned.
type onceRecord struct {
	results []algorithms.Result
	delay   time.Duration
	expires time.Duration // on the store's clock (see Store.elapsed)
}

// onceTable is a shard's records. Its zero value is empty.
type onceTable struct {
	m          map[onceKey]onceRecord
	sweepAfter int
}

// requestID returns ctx's request ID, whether the request is to be applied
// once (it has an ID and charges), and the error for an invalid ID.
func requestID(ctx context.Context, cost int64) (string, bool, error) {
	id, ok := requestid.From(ctx)
	if !ok {
		return "", false, nil
	}
	if err := storecheck.RequestID(ctx); err != nil {
		return "", false, err
	}
	return id, cost > 0, nil
}

// find returns the record of k if it still counts at el on the store's
// clock.
func (o *onceTable) find(k onceKey, el time.Duration) (onceRecord, bool) {
	r, ok := o.m[k]
	if !ok || r.expires <= el {
		return onceRecord{}, false
	}
	return r, true
}

// keep records an admission, to count until the latest ResetAfter of its
// results (at least a microsecond, as on Redis), plus storecheck.ExpiryGrace. Records
// that stopped counting go when the table has doubled since the last sweep.
func (o *onceTable) keep(k onceKey, el, delay time.Duration, results ...algorithms.Result) {
	o.keepFor(k, el, delay, time.Microsecond, results...)
}

// forget drops k's record.
func (o *onceTable) forget(k onceKey) { delete(o.m, k) }

// keepFor is keep for at least least.
func (o *onceTable) keepFor(k onceKey, el, delay, least time.Duration, results ...algorithms.Result) {
	if o.m == nil {
		o.m = make(map[onceKey]onceRecord)
		o.sweepAfter = minSweepOps
	}
	reset := least
	for _, r := range results {
		reset = max(reset, r.ResetAfter)
	}
	o.m[k] = onceRecord{results: results, delay: delay, expires: el + reset + storecheck.ExpiryGrace}
	if len(o.m) >= o.sweepAfter {
		for k, r := range o.m {
			if r.expires <= el {
				delete(o.m, k)
			}
		}
		o.sweepAfter = max(2*len(o.m), minSweepOps)
	}
}
