package storepostgres

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// Reset deletes alg's state for key, or puts back the key's mark, the
// state the latest lease left (see Lease), while the store keeps it. A
// reset with the caller's request ID is applied once: sent again, it does
// not delete what was charged after it.
func (s *Store) Reset(ctx context.Context, k store.Key, alg algorithms.Algorithm) error {
	if err := checkKind(alg); err != nil {
		return err
	}
	if err := alg.Validate(); err != nil {
		return err
	}
	id, given, err := s.begin(ctx)
	if err != nil {
		return err
	}
	rkey := key(k, alg)
	var once []byte // NULL without a request ID
	if given {
		once = onceKey(rkey, onceReset, id)
	}
	var applied bool // whether the reset applied now, or its ID says it did before
	args := []any{rkey, markKey(rkey), once}
	if err := s.queryRow(ctx, "SELECT ratewise.reset($1, $2, $3, 0)", args, &applied); err != nil {
		return s.failure(ctx, err, true)
	}
	return nil
}

// TTL returns how long the store keeps alg's state for key, on the
// server's clock, or 0 if it holds none; it ignores now. The contract
// suite checks with it that a state is kept as long as it counts, and no
// longer than that plus the grace.
func (s *Store) TTL(ctx context.Context, k store.Key, alg algorithms.Algorithm, _ time.Time) (time.Duration, error) {
	if err := checkKind(alg); err != nil {
		return 0, err
	}
	if err := s.ensure(ctx); err != nil {
		return 0, err
	}
	var us int64
	err := s.queryRow(ctx, `SELECT coalesce(max(expires - ratewise.now_us()), 0) FROM ratewise.state
		WHERE key = $1 AND state IS NOT NULL`, []any{key(k, alg)}, &us)
	if err != nil {
		return 0, s.failure(ctx, err, false)
	}
	return time.Duration(max(us, 0)) * time.Microsecond, nil
}
