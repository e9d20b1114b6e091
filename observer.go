package ratewise

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// DecisionEvent is one decision an observer (WithObserver) hears of: each Allow, PeekN and
// Wait step, and each booking (Reserve, and Wait with an algorithm that
// books). A MultiKey's limiters report their own decisions, peeks included.
// Input rejected before the store is asked, such as an empty key or a
// Limiter's cost above its limit, is not reported; input the store rejects,
// such as a Stack's cost above one of its limits or an invalid request ID, is,
// with its error. A refund is not a decision.
type DecisionEvent struct {
	// Stack reports a Stack's decision; false for a Limiter's.
	Stack bool
	// Algorithm is the binding limit's algorithm: the key's (see
	// Limiter.AlgorithmFor) for a Limiter, Binding's for a Stack. Its
	// Kind() and String() describe it; String carries the parameters, such
	// as "gcra 10/1s burst 20".
	Algorithm algorithms.Algorithm
	// Binding is the index of the binding limit in a Stack (see
	// MultiResult.Binding), and 0 for a Limiter or a Stack's error.
	Binding int
	// Key is the key as the caller gave it, without the namespace. Never
	// use it as a metric label (see WithObserver).
	Key string
	// Cost is the request's cost; for a peek, the cost it asked about
	// (n for PeekN).
	Cost int64
	// Peek reports an inspection (Peek, PeekN), which charges nothing.
	Peek bool
	// Result is the decision's (the binding limit's for a Stack); zero when
	// Err is not nil.
	Result Result
	// StoreLatency is how long the store took to answer, on the system's
	// monotonic clock whatever WithClock says, error or not.
	StoreLatency time.Duration
	// Err is the store's error, nil for a decision. It wraps
	// store.ErrUnavailable when the store failed, is ctx's error, or is the
	// error of input the store rejected.
	Err error
}

// WithObserver makes the limiter, or the Stack, report every decision its
// store is asked for to observe (see DecisionEvent), to feed metrics or
// traces. For example, to count decisions by algorithm and outcome:
//
//	observe := func(_ context.Context, e ratewise.DecisionEvent) {
//		outcome := "allowed"
//		switch {
//		case e.Err != nil:
//			outcome = "error"
//		case !e.Result.Allowed:
//			outcome = "denied"
//		}
//		decisions.WithLabelValues(e.Algorithm.Kind().String(), outcome).Inc()
//	}
//	l, err := ratewise.New(s, alg, ratewise.WithObserver(observe))
//
// observe runs on the caller's goroutine after the store answers and before
// the decision is returned, so it must be quick and must not block: count,
// record a histogram sample, and return. It may be called by many
// goroutines at once. Label metrics with the event's Stack,
// Algorithm.Kind().String(), Binding, Result.Allowed and whether Err is
// nil, never with Key: keys are users, IPs and paths, unbounded in number,
// and a metric per key exhausts any metrics backend.
//
// Without an observer, the default, a decision reads no extra clock and
// allocates nothing more (BenchmarkObserver). A nil observe means none.
func WithObserver(observe func(ctx context.Context, e DecisionEvent)) Option {
	return optionFunc(func(l *Limiter) { l.observer = observe })
}

// decisionEvent is what an observer hears of a Limiter's decision on key
// under alg, with its outcome; cost is the store's: <= 0 for a peek. The
// caller sets StoreLatency.
func decisionEvent(key string, alg algorithms.Algorithm, cost int64, res Result, err error) DecisionEvent {
	e := DecisionEvent{
		Algorithm: alg,
		Key:       key,
		Cost:      peekCost(cost),
		Peek:      cost <= 0,
		Err:       err,
	}
	if err == nil {
		e.Result = res
	}
	return e
}

// peekCost is the cost a decision asked about, from the store's cost: a
// negative cost -n inspects for n, and 0 for 1 (see Limiter.PeekN).
func peekCost(cost int64) int64 {
	switch {
	case cost < 0:
		return -cost
	case cost == 0:
		return 1
	}
	return cost
}
