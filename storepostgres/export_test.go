package storepostgres

import (
	"context"
	"runtime"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// Sweep runs one sweep now, as every 64th write starts one, once no other
// sweep runs, and returns how many rows it deleted.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	for !s.sweep.running.CompareAndSwap(false, true) {
		runtime.Gosched()
	}
	defer s.sweep.running.Store(false)
	return s.sweepOnce(ctx)
}

// Batch is one decision of a batch (SendBatch).
type Batch struct {
	Key  string
	Alg  algorithms.Algorithm
	Now  time.Time
	Cost int64
}

// SendBatch decides bs in one call of their kind's batch function, as the
// coalescer sends queued decisions, and returns each one's Result, or its
// error: one that left the batch to go alone is errAlone.
func (s *Store) SendBatch(ctx context.Context, bs []Batch) ([]algorithms.Result, []error) {
	if err := s.ensure(ctx); err != nil {
		return nil, []error{err}
	}
	ds := make([]*decision, len(bs))
	for i, b := range bs {
		now := b.Now.UnixMicro()
		ds[i] = &decision{key: key(store.Key{Name: b.Key}, b.Alg), alg: b.Alg, now: &now, cost: b.Cost}
	}
	s.sendBatch(ctx, ds)
	out := make([]algorithms.Result, len(ds))
	errs := make([]error, len(ds))
	for i, d := range ds {
		if errs[i] = d.err; d.err == nil {
			out[i], _, errs[i] = decisionResult(d.reply, d.alg, d.cost, false, 0)
		}
	}
	return out, errs
}

// ErrAlone is errAlone.
var ErrAlone = errAlone
