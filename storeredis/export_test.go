package storeredis

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// BatchDecision is one decision of a batch sent by DecideBatch.
type BatchDecision struct {
	Key  string
	Alg  algorithms.Algorithm
	Now  time.Time
	Cost int64
}

// DecideBatch sends ds as one coalesced batch, in order, as the queue of
// concurrent Decide calls would be sent, and returns each decision's Result
// or error as Decide would. It lets tests check the batch path in a
// deterministic order.
func DecideBatch(ctx context.Context, s *Store, ds []BatchDecision) ([]algorithms.Result, []error) {
	batch := make([]*decision, len(ds))
	ops := make([]batched, len(ds))
	for i, d := range ds {
		// What do's steps give a decision without a request ID.
		batch[i] = newDecision(s.Key(d.Key, d.Alg), d.Alg, d.Now, d.Cost)
		batch[i].at, batch[i].notBefore, _ = s.clock(d.Now)
		batch[i].horizon = s.horizon
		ops[i] = batch[i]
	}
	s.sendBatch(context.Background(), ops)
	res := make([]algorithms.Result, len(ds))
	errs := make([]error, len(ds))
	for i, d := range batch {
		if errs[i] = s.outcome(ctx, d.err); errs[i] == nil {
			res[i] = d.res
		}
	}
	return res, errs
}

// BatchSet is one set's decision of a batch sent by DecideSetBatch. ID,
// if not empty, is a request ID as the store makes them, which the batch
// applies once.
type BatchSet struct {
	Key  string
	Algs []algorithms.Algorithm
	Now  time.Time
	Cost int64
	ID   string
}

// DecideSetBatch sends sets as one coalesced batch, in order, as the queue
// of concurrent DecideSet calls would be sent, and returns each set's
// Results or error as DecideSet would. It lets tests check the batch path
// in a deterministic order. Its ctx ends the round trip, as a batch's
// latest deadline does.
func DecideSetBatch(ctx context.Context, s *Store, sets []BatchSet) ([][]algorithms.Result, []error) {
	batch := make([]*setDecision, len(sets))
	ops := make([]batched, len(sets))
	for i, set := range sets {
		d, err := s.newSetDecision(store.Key{Name: set.Key}, set.Algs, set.Now, set.Cost)
		if err != nil {
			panic(err)
		}
		// What do's steps give it.
		if set.ID != "" {
			d.rid = requestID{id: set.ID}
		}
		d.at, d.notBefore, _ = s.clock(set.Now)
		d.horizon = s.horizon
		batch[i], ops[i] = d, d
	}
	s.sendBatch(ctx, ops)
	res := make([][]algorithms.Result, len(sets))
	errs := make([]error, len(sets))
	for i, d := range batch {
		if errs[i] = s.outcome(ctx, d.err); errs[i] == nil {
			res[i] = d.results
		}
	}
	return res, errs
}

// SetOnceKey is the once key of a set's decision on key, whose first
// limit is alg, with the request ID id.
func SetOnceKey(s *Store, key string, alg algorithms.Algorithm, id string) string {
	return requestID{id: id}.key(s.Key(key, alg), onceSet)
}

// OnceKey is the once key of a decision on key under alg with request ID id
// (see internal/scripts/once.lua).
func OnceKey(s *Store, key string, alg algorithms.Algorithm, id string) string {
	return requestID{id: id}.key(s.Key(key, alg), onceDecide)
}

// RefundOnceKey is the once key of a refund of key's alg state with the
// request ID id.
func RefundOnceKey(s *Store, key string, alg algorithms.Algorithm, id string) string {
	return requestID{id: id}.key(s.Key(key, alg), onceRefund)
}

// Coalescing returns how many of s's decisions are in flight alone, how
// many are queued and not yet taken to be sent, and how many goroutines
// send queued decisions, so that tests can sequence concurrent callers.
func Coalescing(s *Store) (alone, queued, senders int) { return s.co.Stats() }
