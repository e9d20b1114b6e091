package storeredis

import (
	"context"
	"errors"
	"fmt"
	"github.com/ratewise/ratewise/internal/algo"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// An op is one operation of the store in Redis: a decision, a set's
// decision, a booking, a refund, a reset or a reading of Redis's
// clock. It says only what differs between them, its script, its KEYS and
// ARGV and how to read its reply; do runs every op, through the same steps.
// Decisions and sets' decisions share round trips through the coalescer,
// a call per family of them (see sendBatch), read by the same parse step.
type op interface {
	parser
	// req is the request the op carries, which do's steps fill in.
	req() *request
	// script returns the script the op runs, or an error wrapping
	// store.ErrUnsupported.
	script() (*redis.Script, error)
	// keys returns KEYS: the states' keys, then the once keys of the
	// request's ID, if it has one.
	keys() []string
	// args returns ARGV.
	args() []any
}

// request is what every op carries: what its constructor knows, then what
// do's shared steps decide for it before it is asked for its KEYS and ARGV.
type request struct {
	effect  effect
	rkeys   []string  // the states' Redis keys, built once from the store.Key
	now     time.Time // the caller's now, for an op that decides
	charges bool      // a resend would apply the op twice (see requestID)

	rid       requestID
	at        any   // ARGV[1]: serverTime, or now in µs in client-time mode
	notBefore int64 // the earliest time the reply may say it decided at
	horizon   int64 // µs a once key lives at least (Store.horizon)
	err       error // its outcome in a batch, which sendBatch sets
}

func (r *request) req() *request { return r }

// shares reports whether the op may share its round trip. A charge with
// the caller's ID may be retried under a changed limit, whose reply only
// the op's own script carries (decide.lua, decide_set.lua): it goes alone.
// The store's own IDs are only ever resent as they were, so their batches
// need no limit.
func (r *request) shares() bool { return !(r.rid.caller && r.rid.id != "") }

// effect is what an op does to the states it names, which decides the
// steps do takes around its script.
type effect int

const (
	// reads: Redis's clock. No request ID and no deny cache; the
	// script is not followed by WAIT, and its failure is classified by
	// failure, since it decides nothing.
	reads effect = iota
	// decides: one decision, which the deny cache answers and learns from
	// around do (see decideCached), and which may share its round trip
	// (WithCoalescing).
	decides
	// changes: a set's decision, a booking, a refund. Once sent, the
	// denials remembered for its states no longer hold.
	changes
	// resets: a reset, which changes its state as changes do but takes
	// no time. It is not checked against ctx before it is sent: go-redis
	// fails it then, and its error, classified as a decision's, wraps
	// store.ErrMaybeDecided although nothing was sent.
	resets
)

// do runs o: it takes the request's ID, reads the clock, adds the once
// keys, checks ctx, has the deny cache forget the states a change makes
// stale, shares the round trip of a decision that can, runs the script and
// parses its reply. The request's checks of its input, and the deny
// cache's answer to a decision, come before (see the exported methods).
func (s *Store) do(ctx context.Context, o op) error {
	err := s.doOnce(ctx, o)
	// A calendar window's periods come from the caller's now; on Redis's
	// clock, a caller more than half a period away gets them again about
	// Redis's now, which the step's refusal names. The refusal wrote
	// nothing.
	if t, ok := algo.CalendarSkew(err); ok && !s.clientTime && ctx.Err() == nil {
		r := o.req()
		r.now, r.err = t, nil
		err = s.doOnce(ctx, o)
	}
	return err
}

// doOnce is do's one attempt.
func (s *Store) doOnce(ctx context.Context, o op) error {
	sc, err := o.script()
	if err != nil {
		return err
	}
	r := o.req()
	if r.effect != reads {
		if r.rid, err = s.requestID(ctx, r.charges, !s.recorded(o)); err != nil {
			return err
		}
		r.horizon = s.horizon
	}
	if r.effect == decides || r.effect == changes {
		r.at, r.notBefore, _ = s.clock(r.now)
		if r.rid.id != "" {
			// The first outcome, which a retry returns, was decided
			// earlier.
			r.notBefore = 0
		}
		if err := ctx.Err(); err != nil {
			return err // not sent
		}
	}
	if r.effect == changes || r.effect == resets {
		defer s.forget(r.rkeys...)
	}
	// A decision and a set's share their round trip: the coalescer queues
	// the op itself, and sendBatch sets its outcome.
	if b, ok := o.(batched); ok && s.co != nil && b.shares() {
		deadline, _ := ctx.Deadline()
		t, queued := s.co.Join(b, deadline)
		if queued {
			if _, err := t.Wait(ctx); err != nil {
				return s.decisionFailure(ctx, err)
			}
			return s.outcome(ctx, r.err)
		}
		defer s.co.Sent()
		if r.rid.id == "" && s.recorded(o) {
			// Alone, as a batch of one, once no call on its key is in
			// flight (see writers.go).
			if err := s.writers.acquire(ctx, r.rkeys); err != nil {
				return err // not sent
			}
			s.sendCalls(ctx, []batched{b})
			s.writers.release(r.rkeys)
			return s.outcome(ctx, r.err)
		}
	}
	reply, err := s.run(ctx, r.effect, sc, o.keys(), o.args())
	if err != nil {
		return err
	}
	return parse(o, reply)
}

// run is do's run step: it runs sc with keys and args and returns its
// reply, or its error classified by decisionFailure, or by failure for an
// op that reads. With WithReplicas every script but a read's also waits
// for the replicas (see replicated).
func (s *Store) run(ctx context.Context, eff effect, sc *redis.Script, keys []string, args []any) (any, error) {
	if eff != reads && s.replicas.n > 0 {
		return s.replicated(ctx, sc, keys, args)
	}
	reply, err := sc.Run(ctx, s.client, keys, args...).Result()
	switch {
	case err == nil:
		return reply, nil
	case eff == reads:
		return nil, s.failure(ctx, err)
	}
	return nil, s.decisionFailure(ctx, err)
}

// clock returns what a script is told of the time: ARGV[1]; the earliest
// time its reply may say it decided at; and the time the caller's inputs are
// checked at. In client-time mode all three are the caller's now. Otherwise
// Redis's clock decides: ARGV[1] is serverTime, and now, which is not used,
// is not checked (the Unix epoch stands in).
func (s *Store) clock(now time.Time) (arg any, notBefore int64, checkAt time.Time) {
	if s.clientTime {
		return now.UnixMicro(), now.UnixMicro(), now
	}
	return serverTime, 0, s.checkTime(now)
}

// orNow is the now the store decides at in client-time mode
// (WithClientTime): now, or the system clock's for the zero now. On the
// server's clock now is not used, and stays as it is.
func (s *Store) orNow(now time.Time) time.Time {
	if s.clientTime {
		return storecheck.Now(now)
	}
	return now
}

// checkTime is clock's checkAt alone, which boxes nothing: Decide checks
// its input before it knows whether the deny cache answers.
func (s *Store) checkTime(now time.Time) time.Time {
	if s.clientTime {
		return now
	}
	return time.Unix(0, 0)
}

// serverTime is ARGV[1] when the script reads Redis's TIME: a string no
// number formats to, boxed once.
var serverTime any = ""

// outcome classifies the error of a decision sent in a batch as do's run
// step classifies an error (see failure): a decision's own error already
// wraps store.ErrUnavailable, a round trip's is go-redis's.
func (s *Store) outcome(ctx context.Context, err error) error {
	if err != nil && !errors.Is(err, store.ErrUnavailable) {
		return s.decisionFailure(ctx, err)
	}
	return err
}

// failure classifies an error from Redis: the caller's context error when
// ctx has ended (a deadline or cancellation), ErrUnavailable otherwise. A
// timeout of the client's own, such as a dial or read timeout, is not the
// caller's deadline: it is ErrUnavailable, and the timeout is kept only as
// text, so errors.Is(err, context.DeadlineExceeded) stays false for it. An
// error at or after ctx's deadline is the caller's deadline, even before
// ctx reports it.
func (s *Store) failure(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	if deadline, ok := ctx.Deadline(); ok && ctxErr == nil && !time.Now().Before(deadline) {
		// With ContextTimeoutEnabled the socket's deadline is the
		// context's, and it can fire a moment before the context's own
		// timer marks the context done: the caller's deadline all the same.
		ctxErr = context.DeadlineExceeded
	}
	if ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return err
		}
		return fmt.Errorf("storeredis: %w: %w", ctxErr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}
