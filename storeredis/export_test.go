package storeredis

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
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
	for i, d := range ds {
		// What do's steps give a decision without a request ID.
		batch[i] = newDecision(s.Key(d.Key, d.Alg), d.Alg, d.Now, d.Cost)
		batch[i].at, batch[i].notBefore, _ = s.clock(d.Now)
		batch[i].horizon = s.horizon
	}
	s.sendBatch(context.Background(), batch)
	res := make([]algorithms.Result, len(ds))
	errs := make([]error, len(ds))
	for i, d := range batch {
		if errs[i] = s.outcome(ctx, d.err); errs[i] == nil {
			res[i] = d.res
		}
	}
	return res, errs
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
