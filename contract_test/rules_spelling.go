package contract

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/store"
)

// The rules on how a store spells what it keeps: any key, however long and
// whatever its bytes, is its own state (long_keys), and the records of
// request IDs never mistake one (key, ID) for another (once_spelling).
// Each runs its operations on the store under test and on a
// referenceStore side by side and requires the same outcome of each.

// twin is a store under test beside a referenceStore, in a namespace of a
// rule's own, on the rule's clock.
type twin struct {
	e        *env
	sut, ref store.Store
	ns       string
}

// twin returns the store newStore returned (not the leasing layer over
// it, under Leased: these rules are about what a store keeps) beside a
// fresh referenceStore.
func (e *env) twin() *twin {
	e.n++
	ns := strings.ReplaceAll(fmt.Sprintf("contract.%s.%s.%d", runID, e.t.Name(), e.n), ":", ".")
	return &twin{e: e, sut: e.inner, ref: referenceStore(), ns: ns}
}

// limiters returns a limiter for alg on each side, in the twin's namespace.
func (tw *twin) limiters(alg algorithms.Algorithm) (sut, ref *ratewise.Limiter) {
	tw.e.t.Helper()
	return tw.e.newLimiter(tw.sut, alg, tw.ns), tw.e.newLimiter(tw.ref, alg, tw.ns)
}

func (e *env) newLimiter(s store.Store, alg algorithms.Algorithm, ns string) *ratewise.Limiter {
	e.t.Helper()
	l, err := ratewise.New(s, alg, ratewise.WithClock(e.clock), ratewise.WithNamespace(ns))
	if err != nil {
		e.fatalf("building the limiter for %v: %v", alg, err)
	}
	return l
}

// check fails the rule if the store under test's outcome of what differs
// from the reference's. On a store that decides on its own clock, whose
// waits depend on when it decided, it compares what does not: Allowed,
// Remaining and Limit.
func (tw *twin) check(what string, got any, gotErr error, want any, wantErr error) {
	tw.e.t.Helper()
	if tw.e.cfg.storeClock {
		got, want = coarse(got), coarse(want)
	}
	if msg := same(got, gotErr, want, wantErr); msg != "" {
		tw.e.fatalf("%s: %s", what, msg)
	}
}

// coarse keeps of an outcome what holds at any time.
func coarse(v any) any {
	keep := func(r ratewise.Result) ratewise.Result {
		return ratewise.Result{Allowed: r.Allowed, Remaining: r.Remaining, Limit: r.Limit}
	}
	switch r := v.(type) {
	case ratewise.Result:
		return keep(r)
	case ratewise.MultiResult:
		c := ratewise.MultiResult{Allowed: r.Allowed, Binding: r.Binding}
		for _, x := range r.Results {
			c.Results = append(c.Results, keep(x))
		}
		return c
	case leased:
		return leased{res: keep(r.res)}
	}
	return v
}

// longKeys is the long_keys rule.
func longKeys(e *env) {
	ctx := context.Background()
	tw := e.twin()
	alg := e.c.build(3, e.c.window)
	limit := algo.MaxCost(alg)
	rng := rand.New(rand.NewPCG(uint64(len(e.c.name)), 35))
	keys := longKeySet(tw.ns, rng)
	// A limiter for each namespace, on each side.
	type pair struct{ sut, ref *ratewise.Limiter }
	limiters := map[string]pair{}
	on := func(k store.Key) pair {
		p, ok := limiters[k.Namespace]
		if !ok {
			p = pair{e.newLimiter(tw.sut, alg, k.Namespace), e.newLimiter(tw.ref, alg, k.Namespace)}
			limiters[k.Namespace] = p
		}
		return p
	}
	name := func(i int) string { return fmt.Sprintf("key %d (%d bytes)", i, len(keys[i].String())) }

	// Each key in turn is spent to a denial, its second request carrying
	// a request ID of 128 bytes, sent twice: a key that shared a state, a
	// once record or a mark with an earlier one starts spent.
	for i, k := range keys {
		l := on(k)
		for j := range limit + 1 {
			rctx := ctx
			if j == 1 {
				rctx = ratewise.WithRequestID(ctx, requestID128(rng))
			}
			got, gotErr := l.sut.Allow(rctx, k.Name)
			want, wantErr := l.ref.Allow(rctx, k.Name)
			tw.check(fmt.Sprintf("%s, request %d", name(i), j+1), got, gotErr, want, wantErr)
			if j == 1 {
				again, againErr := l.sut.Allow(rctx, k.Name)
				tw.check(fmt.Sprintf("%s, request %d retried with its ID", name(i), j+1), again, againErr, got, gotErr)
			}
		}
	}
	// Every other key reset, then every key peeked: the reset ones are
	// full, the others still spent.
	for i, k := range keys {
		if l := on(k); i%2 == 0 {
			tw.check(name(i)+", Reset", nil, l.sut.Reset(ctx, k.Name), nil, l.ref.Reset(ctx, k.Name))
		}
	}
	for i, k := range keys {
		l := on(k)
		got, gotErr := l.sut.PeekN(ctx, k.Name, 1)
		want, wantErr := l.ref.PeekN(ctx, k.Name, 1)
		tw.check(name(i)+", a peek after every other key was reset", got, gotErr, want, wantErr)
	}
	// The longest key split into a namespace and a name another way is
	// the same key (store.Key.String).
	long := keys[len(keys)-1]
	joined := store.Key{Name: long.String()}
	got, gotErr := tw.sut.Decide(ctx, joined, alg, e.clock.Now(), 0)
	want, wantErr := tw.ref.Decide(ctx, joined, alg, e.clock.Now(), 0)
	tw.check(fmt.Sprintf("key %d as one name with its namespace", len(keys)-1), got, gotErr, want, wantErr)

	for i, k := range keys {
		tw.capabilities(ctx, alg, k, name(i))
	}
}

// capabilities runs, on key k of a store that has them, a refund, a set's
// decision, a booking and a lease with its reset, each with a request ID.
func (tw *twin) capabilities(ctx context.Context, alg algorithms.Algorithm, sk store.Key, name string) {
	e := tw.e
	e.t.Helper()
	rctx := ratewise.WithRequestID(ctx, name+"/capabilities")
	k := sk.Name
	now := e.clock.Now()
	if rf := tw.sut; !e.cfg.storeClock {
		sut, ref := e.newLimiter(tw.sut, alg, sk.Namespace), e.newLimiter(tw.ref, alg, sk.Namespace)
		res, err := sut.Allow(ctx, k)
		want, wantErr := ref.Allow(ctx, k)
		tw.check(name+", an admission to refund", res, err, want, wantErr)
		if err == nil && res.Allowed {
			got, gotErr := rf.Refund(rctx, sk, alg, now, res.At, 1)
			want, wantErr := tw.ref.Refund(rctx, sk, alg, now, want.At, 1)
			tw.check(name+", Refund with a request ID", got, gotErr, want, wantErr)
		}
	}
	{
		partner := tw.partner()
		stack := func(s store.Store) *ratewise.Stack {
			st, err := ratewise.NewStack(
				s,
				[]algorithms.Algorithm{alg, partner},
				ratewise.WithClock(e.clock),
				ratewise.WithNamespace(sk.Namespace),
			)
			if err != nil {
				e.fatalf("NewStack: %v", err)
			}
			return st
		}
		got, gotErr := stack(tw.sut).Allow(rctx, k)
		want, wantErr := stack(tw.ref).Allow(rctx, k)
		tw.check(name+", a Stack's decision with a request ID", got, gotErr, want, wantErr)
	}
	books := algo.Reserves(alg)
	if rs := tw.sut; books {
		got, delay, gotErr := rs.Reserve(rctx, sk, alg, now, 1, time.Minute)
		want, wantDelay, wantErr := tw.ref.Reserve(rctx, sk, alg, now, 1, time.Minute)
		tw.check(name+", a booking with a request ID", leased{got, delay}, gotErr, leased{want, wantDelay}, wantErr)
	}
	if ls := tw.sut; !e.cfg.leased && (books || algo.FamilyOf(alg.Kind()) == algo.FamilyFixedWindow) {
		tw.check(name+", Reset before a lease", nil, tw.sut.Reset(ctx, sk, alg), nil, tw.ref.Reset(ctx, sk, alg))
		got, delay, gotErr := ls.Lease(ctx, sk, alg, now, 2, time.Minute)
		want, wantDelay, wantErr := tw.ref.Lease(ctx, sk, alg, now, 2, time.Minute)
		tw.check(name+", a lease of 2", leased{got, delay}, gotErr, leased{want, wantDelay}, wantErr)
		sut, ref := e.newLimiter(tw.sut, alg, sk.Namespace), e.newLimiter(tw.ref, alg, sk.Namespace)
		got, gotErr = sut.Allow(ctx, k)
		want, wantErr = ref.Allow(ctx, k)
		tw.check(name+", an admission after the lease", got, gotErr, want, wantErr)
		// The reset puts back the mark: the lease's 2 stay charged, the
		// admission after it goes.
		tw.check(name+", Reset after the lease", nil, tw.sut.Reset(ctx, sk, alg), nil, tw.ref.Reset(ctx, sk, alg))
		got, gotErr = sut.PeekN(ctx, k, 1)
		want, wantErr = ref.PeekN(ctx, k, 1)
		tw.check(name+", a peek after the lease's mark was put back", got, gotErr, want, wantErr)
	}
}

// longKeySet returns the keys the long_keys rule decides on, in namespace
// ns but for the last few: names from 1 byte to 64 KiB, of random bytes
// (binary, mostly not UTF-8), with the lengths of store.Key.String just
// below, at and just above the length from which stores keep a digest,
// pairs that differ only in their last byte; then, in no namespace, keys
// that spell what a store might make of the longest (its SHA-256, raw and
// in base64url, with the "%sha256:" the Redis store writes, or the "#" the
// PostgreSQL store puts before the row), and that longest key last.
func longKeySet(ns string, rng *rand.Rand) []store.Key {
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	const threshold = 2048 // internal/longkey.Threshold, as a user of the suite would see it
	joined := len(ns) + 1  // the namespace and ":" before each name
	var names []string
	for _, n := range []int{
		1, 2, 100, threshold - joined - 1, threshold - joined, threshold - joined + 1, 2700, 3000, 10_000,
	} {
		names = append(names, random(n))
	}
	for _, n := range []int{threshold - joined, threshold - joined + 1, 10_000} {
		k := random(n)
		names = append(names, k+"a", k+"b")
	}
	var keys []store.Key
	for _, n := range names {
		keys = append(keys, store.Key{Namespace: ns, Name: n})
	}
	long := store.Key{Namespace: ns, Name: random(65_536)}
	sum := sha256.Sum256([]byte(long.String()))
	b64 := base64.RawURLEncoding.EncodeToString(sum[:])
	for _, n := range []string{string(sum[:]), b64, "%sha256:" + b64, "#" + string(sum[:])} {
		keys = append(keys, store.Key{Name: n})
	}
	return append(keys, long)
}

// requestID128 returns a request ID of 128 random bytes, the longest.
func requestID128(rng *rand.Rand) string {
	b := make([]byte, requestid.MaxLen)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return string(b)
}

// onceOp is what a request ID is applied to in the once_spelling rule.
type onceOp struct {
	name string
	sep  string // what a store that joined a key and an ID might put between them
	// do runs the operation with ctx, which carries the ID, on key k of
	// limiter l (of 2 per window), after what it needs without an ID.
	do func(tw *twin, ctx context.Context, l *ratewise.Limiter, s store.Store, k string) (any, error)
}

var onceOps = []onceOp{
	{
		"an admission",
		":once:",
		func(_ *twin, ctx context.Context, l *ratewise.Limiter, _ store.Store, k string) (any, error) {
			return l.Allow(ctx, k)
		},
	},
	{
		"a Stack's admission",
		":once-set:",
		func(tw *twin, ctx context.Context, l *ratewise.Limiter, s store.Store, k string) (any, error) {
			st, err := ratewise.NewStack(
				s,
				[]algorithms.Algorithm{l.Algorithm(), tw.partner()},
				ratewise.WithClock(tw.e.clock),
				ratewise.WithNamespace(tw.ns),
			)
			if err != nil {
				return nil, err
			}
			return st.Allow(ctx, k)
		},
	},
	{
		"a refund",
		":once-refund:",
		func(tw *twin, ctx context.Context, l *ratewise.Limiter, s store.Store, k string) (any, error) {
			if tw.e.cfg.storeClock {
				return nil, nil
			}
			res, err := l.Allow(context.Background(), k)
			if err != nil || !res.Allowed {
				return res, err
			}
			return l.Refund(ctx, k, res, 1)
		},
	},
	{
		"a reset",
		":once-reset:",
		func(_ *twin, ctx context.Context, l *ratewise.Limiter, _ store.Store, k string) (any, error) {
			for range 2 {
				if _, err := l.Allow(context.Background(), k); err != nil {
					return nil, err
				}
			}
			return nil, l.Reset(ctx, k)
		},
	},
}

// partner is the second limit of the rules' Stacks: a fixed window twice
// the case's, so that it never shares a state with the case's own.
func (tw *twin) partner() algorithms.Algorithm {
	return algorithms.FixedWindow{Limit: 5, Window: 2 * tw.e.c.window}
}

// onceSpelling is the once_spelling rule: for each pair of operations a
// and b, a is applied to key x with ID p+sepB+z, then b to key
// x+sepA+p with ID z, so that a store that spelled a once record as key,
// separator and ID would take b's record for a's; and the same with the
// separators the stores use between other parts (":", "}", "%", NUL) and
// none. Every outcome, and a peek of each key after both, must be the
// reference store's: a store that took b for a returns a's outcome to b
// and leaves x+sepA+p as it was.
func onceSpelling(e *env) {
	if !e.inner.Capabilities().RequestIDs {
		e.t.Skip("the store does not apply request IDs (store.Capabilities.RequestIDs)")
	}
	ctx := context.Background()
	alg := e.c.build(2, e.c.window)
	type pair struct{ a, b onceOp }
	var pairs []pair
	for _, a := range onceOps {
		for _, b := range onceOps {
			pairs = append(pairs, pair{a, b})
		}
	}
	for _, sep := range []string{":", "}", "%", "\x00", ""} {
		a := onceOps[0]
		a.sep = sep
		pairs = append(pairs, pair{a, a})
	}
	for i, p := range pairs {
		tw := e.twin()
		sut, ref := tw.limiters(alg)
		x := fmt.Sprintf("x%d", i)
		keyA, idA := x, "p"+p.b.sep+"z"
		keyB, idB := x+p.a.sep+"p", "z"
		what := fmt.Sprintf(
			"%s on key %q with ID %q, then %s on key %q with ID %q",
			p.a.name,
			keyA,
			idA,
			p.b.name,
			keyB,
			idB,
		)
		ctxA, ctxB := ratewise.WithRequestID(ctx, idA), ratewise.WithRequestID(ctx, idB)
		got, gotErr := p.a.do(tw, ctxA, sut, tw.sut, keyA)
		want, wantErr := p.a.do(tw, ctxA, ref, tw.ref, keyA)
		tw.check(what+": the first", got, gotErr, want, wantErr)
		got, gotErr = p.b.do(tw, ctxB, sut, tw.sut, keyB)
		want, wantErr = p.b.do(tw, ctxB, ref, tw.ref, keyB)
		tw.check(what+": the second", got, gotErr, want, wantErr)
		for _, k := range []string{keyA, keyB} {
			got, gotErr := sut.PeekN(ctx, k, 1)
			want, wantErr := ref.PeekN(ctx, k, 1)
			tw.check(fmt.Sprintf("%s: a peek of %q after both", what, k), got, gotErr, want, wantErr)
		}
	}
}
