package storeredis

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// Reset deletes alg's state for key, or puts back the key's mark, the
// state the latest lease left (see Lease), while Redis keeps it. The memory
// of a large sorted set is freed in the background (UNLINK), so even a key
// of millions of records does not block Redis. A reset with a request ID,
// the caller's or, with a client that resends, the store's, is applied
// once: sent again, it does not delete what was charged after it.
func (s *Store) Reset(ctx context.Context, k store.Key, alg algorithms.Algorithm) error {
	if _, err := scriptFor(alg); err != nil {
		return err
	}
	if err := alg.Validate(); err != nil {
		return err
	}
	r := &reset{}
	r.effect, r.charges = resets, true
	r.own[0] = s.Key(k.String(), alg)
	r.rkeys = r.own[:]
	return s.do(ctx, r)
}

// reset is the op of a reset (reset.lua).
type reset struct {
	request
	own [1]string // rkeys' array
}

func (r *reset) script() (*redis.Script, error) { return scripts.Reset, nil }

// keys are the state and its mark, then with a request ID the reset's
// once key.
func (r *reset) keys() []string {
	keys := []string{r.rkeys[0], r.rkeys[0] + markSuffix}
	if once := r.rid.key(r.rkeys[0], onceReset); once != "" {
		keys = append(keys, once)
	}
	return keys
}

// args are ARGV: how long go-redis may resend the reset, in ms, rounded up.
func (r *reset) args() []any { return []any{(r.horizon + 999) / 1000} }

// parse accepts any reply: whether the reset was applied now or before,
// the state is gone.
func (r *reset) parse(any) error { return nil }
