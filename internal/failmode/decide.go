package failmode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// Decider decides requests for one middleware: with a Limiter (on a
// route's algorithm instead of its own when Route is set), a Stack on one
// key, or a MultiKey on a key for each of its Limiters; under Mode when
// the store fails; within Timeout (0 for none). Exactly one of Limiter,
// Stack and Multi is set. It is safe for simultaneous use once set up.
type Decider struct {
	Limiter *ratewise.Limiter
	Route   algorithms.Algorithm
	Stack   *ratewise.Stack
	Multi   *ratewise.MultiKey
	// Limiters are Multi's, kept so that each request need not copy them.
	Limiters []*ratewise.Limiter
	Mode     Mode
	Timeout  time.Duration
}

// Limits is how many limits each request is decided by, each of which the
// fields name.
func (d *Decider) Limits() int {
	switch {
	case d.Multi != nil:
		return len(d.Limiters)
	case d.Stack != nil:
		return len(d.Stack.Algorithms())
	}
	return 1
}

// A Verdict is what a request gets.
type Verdict int

const (
	// Admit: the request goes on; its Decision is described.
	Admit Verdict = iota
	// Deny: the request is over a limit; its Decision is described and
	// its Result says when to come back.
	Deny
	// Unlimited: the store failed and the mode let the request through
	// with nothing decided, so nothing to describe.
	Unlimited
	// Fail: the request fails with Outcome.Err.
	Fail
)

// Decision is what was decided: the request's Result (for a Stack or a
// MultiKey, the binding limit's), every limit's Result, and which of them
// binds.
type Decision struct {
	Result  ratewise.Result
	Results []ratewise.Result
	Binding int
}

// Outcome is what Decide decided for a request.
type Outcome struct {
	Verdict Verdict
	// Decision and Algorithms, the limits it describes, are set for Admit
	// and Deny.
	Decision   Decision
	Algorithms []algorithms.Algorithm
	// Err is Fail's error. StoreFailed reports that it is the store's,
	// which the mode refused to let through: a closed mode, or a fallback
	// whose local limiter failed too. Otherwise it is a bug or a
	// misconfiguration (an algorithm the store cannot run, a clock out of
	// range), the request's own context ending, or a cost above the limit
	// (algorithms.ErrCostExceedsLimit), the client's error.
	Err         error
	StoreFailed bool
	// Degraded reports that the mode answered, for the middleware's
	// observer: Allowed whether it let the request through, StoreErr the
	// store's error.
	Degraded bool
	Allowed  bool
	StoreErr error
}

// Decide decides one request of cost on key, or on keys for a MultiKey:
// it finds the limits' algorithms (the route's, the Stack's, or each key's
// under ratewise.WithTiers), decides within the timeout and, when the store
// failed or timed out, asks the mode. report hears of every error first,
// the store's before the mode acts, except a cost above the limit, which is
// the client's error; it must not keep what it is given past its return.
func (d *Decider) Decide(ctx context.Context, key string, keys []string, cost int64, report func(error)) Outcome {
	algs, err := d.algorithms(ctx, key, keys)
	if err != nil {
		report(err)
		return Outcome{Verdict: Fail, Err: err}
	}
	dec, err := d.decide(ctx, key, keys, algs, cost)
	switch {
	case err == nil:
		out := Outcome{Verdict: Admit, Decision: dec, Algorithms: algs}
		if !dec.Result.Allowed {
			out.Verdict = Deny
		}
		return out
	case errors.Is(err, algorithms.ErrCostExceedsLimit):
		return Outcome{Verdict: Fail, Err: err}
	case !d.storeFailure(ctx, err):
		// A bug or a misconfiguration, such as an algorithm the store
		// cannot run or a clock out of range: the mode must not hide it.
		report(err)
		return Outcome{Verdict: Fail, Err: err}
	}
	report(err)
	out := Outcome{Degraded: true, StoreErr: err}
	switch d.Mode.name {
	case OpenName:
		out.Verdict, out.Allowed = Unlimited, true
	case FallbackName:
		// A MultiKey takes no Fallback, the one mode that reads key.
		res, ferr := d.Mode.local.AllowN(ctx, key, cost)
		if ferr != nil {
			out.Verdict, out.Err, out.StoreFailed = Fail, err, true
			break
		}
		out.Verdict, out.Allowed = Admit, res.Allowed
		if !res.Allowed {
			out.Verdict = Deny
		}
		out.Decision = Decision{Result: res, Results: []ratewise.Result{res}}
		out.Algorithms = algs
	default:
		out.Verdict, out.Err, out.StoreFailed = Fail, err, true
	}
	return out
}

// algorithms returns the limits a request is decided by, which the fields
// describe: a Stack's, a route's, or the key's own (see
// ratewise.WithTiers), for a MultiKey each key's.
func (d *Decider) algorithms(ctx context.Context, key string, keys []string) ([]algorithms.Algorithm, error) {
	switch {
	case d.Multi != nil:
		algs := make([]algorithms.Algorithm, len(keys))
		for i, l := range d.Limiters {
			alg, err := l.AlgorithmFor(ctx, keys[i])
			if err != nil {
				return nil, err
			}
			algs[i] = alg
		}
		return algs, nil
	case d.Stack != nil:
		return d.Stack.Algorithms(), nil
	case d.Route != nil:
		return []algorithms.Algorithm{d.Route}, nil
	}
	alg, err := d.Limiter.AlgorithmFor(ctx, key)
	if err != nil {
		return nil, err
	}
	return []algorithms.Algorithm{alg}, nil
}

// decide runs the limiter, the Stack or the MultiKey, with the decision
// timeout on its context. Every store honours its context (the store
// contract requires it), so the call returns by the deadline; with the
// Redis store, given the client settings docs/redis.md recommends.
func (d *Decider) decide(
	parent context.Context,
	key string,
	keys []string,
	algs []algorithms.Algorithm,
	cost int64,
) (Decision, error) {
	ctx := parent
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, d.Timeout)
		defer cancel()
	}
	dec, err := d.run(ctx, key, keys, algs, cost)
	switch {
	case err == nil:
		return dec, nil
	case ended(parent):
		// The request's own context ended, not the store.
		if err := parent.Err(); err != nil {
			return Decision{}, err
		}
		return Decision{}, context.DeadlineExceeded
	case ctx != parent && ended(ctx) && !errors.Is(err, store.ErrUnavailable):
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
		}
		return Decision{}, fmt.Errorf("%w: no decision within %v: %w", store.ErrUnavailable, d.Timeout, err)
	}
	// A store that gave up on the decision's deadline itself, with an
	// error of its own, timed out too.
	if ctx != parent && ended(ctx) && !errors.Is(err, context.DeadlineExceeded) {
		return Decision{}, fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	}
	return Decision{}, err
}

// ended reports whether ctx is done or its deadline has passed: a socket
// deadline taken from ctx can fire a moment before ctx's own timer marks it
// done.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// run asks the limiter, the Stack on key, or the MultiKey on keys.
func (d *Decider) run(
	ctx context.Context,
	key string,
	keys []string,
	algs []algorithms.Algorithm,
	cost int64,
) (Decision, error) {
	var sr ratewise.MultiResult
	var err error
	switch {
	case d.Multi != nil:
		sr, err = d.Multi.AllowN(ctx, keys, cost)
	case d.Stack != nil:
		sr, err = d.Stack.AllowN(ctx, key, cost)
	default:
		res, err := d.Limiter.AllowWith(ctx, key, algs[0], cost)
		return Decision{Result: res, Results: []ratewise.Result{res}}, err
	}
	if err != nil {
		return Decision{}, err
	}
	// The binding limit's Result is the Stack's or the MultiKey's answer:
	// denied, it is the limit with the longest wait, their RetryAfter.
	return Decision{Result: sr.Results[sr.Binding], Results: sr.Results, Binding: sr.Binding}, nil
}

// storeFailure reports whether err is a failure of the store, which the
// mode handles: the store was unavailable, or the decision timeout passed
// (whether the store gave up on its own deadline or the middleware stopped
// waiting). A request whose own context ended is not one.
func (d *Decider) storeFailure(ctx context.Context, err error) bool {
	if errors.Is(err, store.ErrUnavailable) {
		return true
	}
	return d.Timeout > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}
