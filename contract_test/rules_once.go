package contract

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/store"
)

// needIDs skips a request-ID rule on a store that does not apply request
// IDs (store.Capabilities.RequestIDs).
func (e *env) needIDs() {
	if !e.store.Capabilities().RequestIDs {
		e.t.Skip("the store does not apply request IDs (store.Capabilities.RequestIDs)")
	}
}

// requestIDOnce: a request retried with its ID returns the first outcome
// and charges nothing, whatever it is retried through; another ID charges;
// a denial is decided afresh; a bad ID is an error that charges nothing.
// Each step is checked against a twin key that sees the same requests
// without retries.
func requestIDOnce(e *env) {
	e.needIDs()
	bg := context.Background()
	l := e.limiter(e.c.alg)
	id := func(s string) context.Context { return ratewise.WithRequestID(bg, e.t.Name()+"/"+s) }
	same := func(what string) {
		e.t.Helper()
		if got, want := e.peek(l, "k"), e.peek(l, "twin"); got != want {
			e.fatalf("%s at %s: the key shows %+v, its twin without retries %+v", what, e.at(), got, want)
		}
	}

	n := min(e.c.limit, 2)
	first, err := l.AllowN(id("a"), "k", n)
	if err != nil || !first.Allowed {
		e.fatalf("AllowN(%d) with ID a on a fresh key: %+v, %v", n, first, err)
	}
	e.allowN(l, "twin", n)
	for _, step := range []time.Duration{0, time.Microsecond, first.ResetAfter / 2} {
		e.clock.Advance(step)
		again, err := l.AllowN(id("a"), "k", n)
		if err != nil || again != first {
			e.fatalf(
				"AllowN(%d) again with ID a, %v after the first: %+v, %v; want the first outcome %+v",
				n,
				step,
				again,
				err,
				first,
			)
		}
		// A cost the retry does not repeat, too: the ID names the request.
		if again, err := l.AllowN(id("a"), "k", 1); err != nil || again != first {
			e.fatalf("AllowN(1) with ID a: %+v, %v; want the first outcome %+v", again, err, first)
		}
		same("retries of one request")
	}

	// A retry made after the key's limit changed gets the first outcome,
	// with the limit it was decided under.
	for _, limit := range []int64{max(e.c.limit/2, 1), 2 * e.c.limit} {
		changed := e.c.build(limit, e.c.window)
		if again, err := l.AllowWith(id("a"), "k", changed, 1); err != nil || again != first {
			e.fatalf("AllowWith a limit of %d, with ID a: %+v, %v; want the first outcome %+v", limit, again, err, first)
		}
	}
	same("retries under a changed limit")

	// Another ID is another request.
	if e.c.limit > n {
		other, err := l.AllowN(id("b"), "k", 1)
		if want := e.allow(l, "twin"); err != nil || other != want {
			e.fatalf("Allow with ID b: %+v, %v; the twin got %+v", other, err, want)
		}
		same("a second ID")
	}

	// A denial is not remembered: retried after its RetryAfter, the
	// request is decided afresh, and then applied once.
	for e.allow(l, "twin").Allowed {
	}
	for e.allow(l, "k").Allowed {
	}
	// Denials of other requests, which a store may remember, do not hide
	// a retried admission.
	if again, err := l.AllowN(id("a"), "k", n); err != nil || again != first {
		e.fatalf(
			"AllowN(%d) with ID a on a key that just denied others: %+v, %v; want the first outcome %+v",
			n,
			again,
			err,
			first,
		)
	}
	denied, err := l.Allow(id("c"), "k")
	if err != nil || denied.Allowed {
		e.fatalf("Allow with ID c on a full key: %+v, %v", denied, err)
	}
	e.clock.Advance(denied.RetryAfter)
	admitted, err := l.Allow(id("c"), "k")
	if err != nil || !admitted.Allowed {
		e.fatalf(
			"Allow with ID c, retried after RetryAfter %v: %+v, %v; want an admission",
			denied.RetryAfter,
			admitted,
			err,
		)
	}
	if again, err := l.Allow(id("c"), "k"); err != nil || again != admitted {
		e.fatalf("Allow with ID c once more: %+v, %v; want %+v", again, err, admitted)
	}
	e.allow(l, "twin")
	same("a denied request retried")

	// Inspections ignore the ID: a peek with an admission's ID reports the
	// state as it is now.
	if p, err := l.PeekN(id("c"), "k", 1); err != nil || p != e.peek(l, "k") {
		e.fatalf("Peek with ID c: %+v, %v; without an ID %+v", p, err, e.peek(l, "k"))
	}

	// A bad ID is invalid input, and charges nothing.
	for _, bad := range []string{"", strings.Repeat("x", requestid.MaxLen+1)} {
		res, err := l.Allow(ratewise.WithRequestID(bg, bad), "fresh")
		if !errors.Is(err, store.ErrInvalidRequestID) || res.Allowed {
			e.fatalf("Allow with a request ID of %d bytes: %+v, %v; want ErrInvalidRequestID", len(bad), res, err)
		}
	}
	if p := e.peek(l, "fresh"); p.Remaining != e.c.limit {
		e.fatalf("requests with bad IDs charged a fresh key: %+v", p)
	}

	// Many goroutines retrying one request at once charge it once, and all
	// get the first outcome.
	e.clock.Advance(e.c.fullBack)
	var wg sync.WaitGroup
	results := make([]ratewise.Result, 16)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() { results[i], errs[i] = l.Allow(id("d"), "hot") })
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i] != results[0] || !results[0].Allowed {
			e.fatalf("16 concurrent retries of one request: %+v, %v and %+v, %v", results[0], errs[0], results[i], errs[i])
		}
	}
	e.allow(l, "hot-twin")
	if got, want := e.peek(l, "hot"), e.peek(l, "hot-twin"); got != want {
		e.fatalf("16 concurrent retries of one request left %+v, one request %+v", got, want)
	}

	requestIDSet(e, id)
	requestIDReserve(e, id)
	requestIDRefund(e, id)
	requestIDReset(e, id)
}

// requestIDReset: a reset retried with its ID is not applied again, so it
// does not forget what was charged after it.
func requestIDReset(e *env, id func(string) context.Context) {
	l := e.limiter(e.c.alg)
	e.allowN(l, "k", min(e.c.limit, 3))
	if err := l.Reset(id("reset"), "k"); err != nil {
		e.fatalf("Reset with an ID: %v", err)
	}
	e.allow(l, "k")
	if err := l.Reset(id("reset"), "k"); err != nil {
		e.fatalf("Reset retried with its ID: %v", err)
	}
	if p := e.peek(l, "k"); p.Remaining != e.c.limit-1 {
		e.fatalf("a reset retried with its ID forgot a request made after it: %+v, want Remaining %d", p, e.c.limit-1)
	}
	if err := l.Reset(id("another reset"), "k"); err != nil {
		e.fatalf("Reset with another ID: %v", err)
	}
	if p := e.peek(l, "k"); p.Remaining != e.c.limit {
		e.fatalf("a reset with another ID: %+v, want the key full", p)
	}
	if err := l.Reset(ratewise.WithRequestID(context.Background(), ""), "k"); !errors.Is(err, store.ErrInvalidRequestID) {
		e.fatalf("Reset with an empty ID: %v, want ErrInvalidRequestID", err)
	}
}

// requestIDSet: a set's request retried with its ID charges every limit
// once.
func requestIDSet(e *env, id func(string) context.Context) {
	s, lims := e.set(e.c.alg, e.partner(e.c.limit))
	first, err := s.Allow(id("set"), "k")
	if err != nil || !first.Allowed {
		e.fatalf("a set's Allow with an ID: %+v, %v", first, err)
	}
	e.clock.Advance(time.Microsecond)
	again, err := s.Allow(id("set"), "k")
	if err != nil || again.Allowed != first.Allowed || again.Binding != first.Binding ||
		!equalResults(again.Results, first.Results) {
		e.fatalf("a set's Allow retried with its ID: %+v, %v; want the first outcome %+v", again, err, first)
	}
	for i, l := range lims {
		if p := e.peek(l, "k"); p.Remaining != algo.ParamsOf(l.Algorithm()).Limit-1 &&
			p.Remaining != first.Results[i].Remaining {
			e.fatalf("limit %d of a set after a retried request: %+v; charged once it would show %+v", i, p, first.Results[i])
		}
	}
}

func equalResults(a, b []ratewise.Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// requestIDReserve: a booking retried with its ID returns the first
// booking's wait and books nothing more.
func requestIDReserve(e *env, id func(string) context.Context) {
	rs := e.store
	if !algo.Reserves(e.c.alg) {
		return
	}
	l := e.limiter(e.c.alg)
	key := l.prefix + "k"
	for range e.c.limit {
		res, _, err := rs.Reserve(context.Background(), store.Key{Name: key}, e.c.alg, e.clock.Now(), 1, e.c.window)
		if err != nil || !res.Allowed {
			e.fatalf("booking the burst: %+v, %v", res, err)
		}
	}
	res, delay, err := rs.Reserve(id("book"), store.Key{Name: key}, e.c.alg, e.clock.Now(), 1, e.c.window)
	if err != nil || !res.Allowed || delay <= 0 {
		e.fatalf("a booking with an ID behind the burst: %+v, delay %v, %v", res, delay, err)
	}
	again, delay2, err := rs.Reserve(id("book"), store.Key{Name: key}, e.c.alg, e.clock.Now(), 1, e.c.window)
	if err != nil || again != res || delay2 != delay {
		e.fatalf("the booking retried with its ID: %+v, delay %v, %v; want %+v, delay %v", again, delay2, err, res, delay)
	}
	// The ID names the request, booked or decided: Allow returns the
	// booking, and a booking with the ID of an admission its admission,
	// with no wait.
	if got, err := l.Allow(id("book"), "k"); err != nil || got != res {
		e.fatalf("Allow with a booking's ID: %+v, %v; want the booking %+v", got, err, res)
	}
	other := e.limiter(e.c.alg)
	decided, err := other.Allow(id("decided"), "k")
	if err != nil || !decided.Allowed {
		e.fatalf("Allow with ID decided: %+v, %v", decided, err)
	}
	got, d, err := rs.Reserve(id("decided"), store.Key{Name: other.prefix + "k"}, e.c.alg, e.clock.Now(), 1, e.c.window)
	if err != nil || got != decided || d != 0 {
		e.fatalf(
			"a booking with an admission's ID: %+v, delay %v, %v; want the admission %+v, no delay",
			got,
			d,
			err,
			decided,
		)
	}
	next, delay3, err := rs.Reserve(context.Background(), store.Key{Name: key}, e.c.alg, e.clock.Now(), 1, e.c.window)
	if err != nil || !next.Allowed || delay3 != e.c.costBack(2) {
		e.fatalf(
			"the next booking after a retried one: %+v, delay %v, %v; want a delay of %v (one booking ahead)",
			next,
			delay3,
			err,
			e.c.costBack(2),
		)
	}
}

// requestIDRefund: a refund retried with its ID gives back once.
func requestIDRefund(e *env, id func(string) context.Context) {
	if e.c.limit < 3 {
		return
	}
	l := e.limiter(e.c.alg)
	var last ratewise.Result
	for range 3 {
		last = e.allow(l, "k")
		e.allow(l, "twin")
	}
	first, err := l.Refund(id("refund"), "k", last, 1)
	if err != nil {
		e.fatalf("Refund with an ID: %v", err)
	}
	again, err := l.Refund(id("refund"), "k", last, 1)
	if err != nil || again != first {
		e.fatalf("Refund retried with its ID: %+v, %v; want the first refund's %+v", again, err, first)
	}
	if _, err := l.Refund(context.Background(), "twin", last, 1); err != nil {
		e.fatalf("Refund on the twin: %v", err)
	}
	if got, want := e.peek(l, "k"), e.peek(l, "twin"); got != want {
		e.fatalf("a refund retried with its ID left %+v, one refund %+v", got, want)
	}

	// An admission given back by a refund with its ID is charged again
	// when the request is retried, and that admission can be refunded in
	// turn.
	admitted, err := l.Allow(id("again"), "k")
	if err != nil || !admitted.Allowed {
		e.fatalf("Allow with ID again: %+v, %v", admitted, err)
	}
	e.allow(l, "twin")
	for round := range 2 {
		if _, err := l.Refund(id("again"), "k", admitted, 1); err != nil {
			e.fatalf("Refund %d with ID again: %v", round+1, err)
		}
		if _, err := l.Refund(context.Background(), "twin", admitted, 1); err != nil {
			e.fatalf("Refund on the twin: %v", err)
		}
		if got, want := e.peek(l, "k"), e.peek(l, "twin"); got != want {
			e.fatalf("refund %d of an admission with ID again left %+v; the twin %+v", round+1, got, want)
		}
		if admitted, err = l.Allow(id("again"), "k"); err != nil || !admitted.Allowed {
			e.fatalf("Allow with ID again after its refund: %+v, %v; want an admission", admitted, err)
		}
		if want := e.allow(l, "twin"); admitted != want {
			e.fatalf("Allow with ID again after its refund: %+v; the twin, charged again, %+v", admitted, want)
		}
	}
}
