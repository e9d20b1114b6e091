package storepostgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// decideSQL are the decision statements, by kind (pgsql.Decision).
var decideSQL = func() map[*algorithms.Kind]string {
	m := map[*algorithms.Kind]string{}
	for _, k := range algorithms.Kinds() {
		m[k] = pgsql.Decision(k)
	}
	return m
}()

// Decide decides cost for key under alg in one statement (see the package
// doc).
func (s *Store) Decide(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	now = s.orNow(now)
	if err := checkKind(alg); err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckDecision(alg, s.checkTime(now), cost); err != nil {
		return algorithms.Result{}, err
	}
	return retrySkew(ctx, s, now, func(now time.Time) (algorithms.Result, error) {
		res, _, err := s.send(ctx, k, alg, now, cost, 0)
		return res, err
	})
}

// retrySkew runs f at now, and on the server's clock once more at the
// server's now when a calendar window's step refused now, more than half a
// period from it (algo.CalendarSkew): the periods a calendar window's step
// takes come from the caller's now (pgsql.Params), and the refusal wrote
// nothing.
func retrySkew[R any](ctx context.Context, s *Store, now time.Time, f func(time.Time) (R, error)) (R, error) {
	r, err := f(now)
	if t, ok := algo.CalendarSkew(err); ok && !s.clientTime && ctx.Err() == nil {
		return f(t)
	}
	return r, err
}

// Reserve books a request for key under alg in one statement (see
// store.Store.Reserve): the token bucket and GCRA.
func (s *Store) Reserve(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = s.orNow(now)
	if err := checkKind(alg); err != nil {
		return algorithms.Result{}, 0, err
	}
	if err := storecheck.Reserve(alg, s.checkTime(now), cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	return s.send(ctx, k, alg, now, cost, maxWait.Microseconds())
}

// send runs a decision, or with a slack above 0 a booking: the upsert,
// or with the caller's request ID and a cost above 0 the kind's once
// driver.
func (s *Store) send(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost, slack int64,
) (algorithms.Result, time.Duration, error) {
	id, given, err := s.begin(ctx)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	at, notBefore := s.clock(now)
	p1, p2, p3 := pgsql.Params(alg, now)
	rkey := key(k, alg)
	var reply []int64
	if s.co != nil && !given && slack == 0 {
		d := &decision{key: rkey, alg: alg, now: at, cost: cost}
		var queued bool
		switch reply, queued, err = s.shared(ctx, d); {
		case queued && err == nil:
			return decisionResult(reply, alg, cost, false, notBefore)
		case queued && err != errAlone:
			return algorithms.Result{}, 0, err
		case !queued:
			defer s.co.Sent()
		}
	}
	if given && cost > 0 {
		err = s.queryRow(ctx, "SELECT ratewise."+alg.Kind().String()+"_once($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0)",
			[]any{rkey, onceKey(rkey, onceDecide, id), at, cost, slack, p1, p2, p3, s.grace, algo.MaxCost(alg)}, &reply)
	} else {
		err = s.queryRow(ctx, decideSQL[alg.Kind()], []any{rkey, at, cost, slack, p1, p2, p3, s.grace}, &reply)
	}
	if err != nil {
		return algorithms.Result{}, 0, s.failure(ctx, err, cost > 0)
	}
	s.sweep.tick(s, 1)
	once := given && cost > 0
	if once {
		notBefore = 0 // the first outcome, which a retry returns, was decided earlier
	}
	return decisionResult(reply, alg, cost, once, notBefore)
}

// decisionResult reads a decision's reply: {allowed, remaining, retry_after,
// reset_after, at, delay}, then with a request ID the limit, the
// parameters the admission was charged under and its cost.
func decisionResult(
	reply []int64,
	alg algorithms.Algorithm,
	cost int64,
	once bool,
	notBefore int64,
) (algorithms.Result, time.Duration, error) {
	want := 6
	if once {
		want = 10
	}
	if len(reply) != want {
		return algorithms.Result{}, 0, malformed(reply, "want %d integers", want)
	}
	limit := algo.MaxCost(alg)
	if once {
		limit = reply[6]
	}
	res, err := fields(reply, limit, notBefore)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	delay := reply[5]
	if delay < 0 || delay > int64(algo.EnvelopeMaxWindow/time.Microsecond) {
		return algorithms.Result{}, 0, malformed(reply, "delay %d", delay)
	}
	if !once {
		res.SetCharged(alg, cost)
	} else if res, err = storecheck.Charged(res, alg, reply[7], reply[8], reply[9]); err != nil {
		return algorithms.Result{}, 0, malformed(reply, "%v", err)
	}
	return res, time.Duration(delay) * time.Microsecond, nil
}

// fields checks a reply's first five fields and returns them as a Result.
func fields(reply []int64, limit, notBefore int64) (algorithms.Result, error) {
	res, err := storecheck.Result([5]int64(reply[:5]), limit, notBefore)
	if err != nil {
		return algorithms.Result{}, malformed(reply, "%v", err)
	}
	return res, nil
}

// errMalformed is wrapped by the error of a request whose reply is not one
// this version's functions return: a schema of another version, or a
// function changed by hand. It wraps store.ErrUnavailable, so that it is
// never read as an admission.
var errMalformed = fmt.Errorf("%w: storepostgres: malformed reply", store.ErrUnavailable)

func malformed(reply []int64, format string, args ...any) error {
	return fmt.Errorf("%w: %s (reply %v)", errMalformed, fmt.Sprintf(format, args...), reply)
}

// Kinds of once keys: one ID names a request's admission (a decision or a
// booking), a set's decision, a refund of the admission, and a reset.
const (
	onceDecide = "once"
	onceSet    = "once-set"
	onceRefund = "once-refund"
	onceReset  = "once-reset"
)

// onceKey returns the key of the once row of request ID id of kind on the
// state at rkey: the kind, the length of rkey in decimal, rkey and the ID,
// as in "once:9:gcra:1s:xid-17". The length makes the spelling one-to-one:
// a key and an ID that end and begin with what separates them elsewhere
// (key "x" with ID "y:once:z", key "x:once:y" with ID "z") name two rows.
func onceKey(rkey []byte, kind, id string) []byte {
	b := make([]byte, 0, len(kind)+len(rkey)+len(id)+8)
	b = append(b, kind...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(len(rkey)), 10)
	b = append(b, ':')
	return append(append(b, rkey...), id...)
}
