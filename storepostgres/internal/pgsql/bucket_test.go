package pgsql_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// TestBucketBookings holds the bucket kinds' SQL step to algo.Reserve on
// random sequences of bookings (slack > 0), with plain decisions,
// inspections, refunds of bookings, limit changes and stale clocks between
// them: Result, delay and the state written, field by field (the state
// through algo.Pack: the words of a packable state, and for any state the
// time it stops counting, which keep must reach). TestStepsDifferential
// runs the steps with slack 0 only.
func TestBucketBookings(t *testing.T) {
	p, kinds := pool(t)
	kinds = bucketKinds(t, kinds)
	for _, k := range kinds {
		i := slices.Index(algorithms.Kinds(), k)
		t.Run(k.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			var n bucketCounts
			for seq := range sequences() {
				bucketSequence(t, p, rng, difftest.Scope(rng, k), seq, &n)
			}
			// The sequences must reach what they are for.
			t.Logf("%+v", n)
			if n.delayed == 0 || n.beyond == 0 || n.refunded == 0 || n.unpacked == 0 {
				t.Errorf("too few bookings, waits beyond the slack, refunds or unpackable states: %+v", n)
			}
		})
	}
}

// bucketKinds returns the kinds that book, the token bucket and GCRA,
// among those the test runs, and skips t when there are none.
func bucketKinds(t *testing.T, kinds []*algorithms.Kind) []*algorithms.Kind {
	t.Helper()
	kinds = slices.DeleteFunc(
		slices.Clone(kinds),
		func(k *algorithms.Kind) bool { return algo.FamilyOf(k) != algo.FamilyBucket },
	)
	if len(kinds) == 0 {
		t.Skip("no bucket kind among RATEWISE_PG_KINDS")
	}
	return kinds
}

// bucketCounts counts what sequences reached: bookings admitted with a
// delay, requests denied with a slack above 0, refunds that gave something
// back, and states written that Go does not pack (a fraction of a µs, or
// a rate count change marked).
type bucketCounts struct{ delayed, beyond, refunded, unpacked int }

// bucketBooking is an admission not yet refunded: its At and cost.
type bucketBooking struct {
	at   time.Time
	cost int64
}

func bucketSequence(t *testing.T, p *pgxpool.Pool, rng *rand.Rand, lim difftest.Limits, seq int, count *bucketCounts) {
	alg, relimit := lim.Alg, lim.Relimit
	t.Helper()
	ctx := context.Background()
	var goState algo.State
	var sqlState []int64
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).
		Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond)
	var booked []bucketBooking
	var history []string // what happened, for a failure's message
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s, sequence %d: %s\n%s", alg, seq, fmt.Sprintf(format, args...), bucketTail(history))
	}
	for step := range difftest.Steps {
		now = bucketClock(rng, alg, now)
		if rng.IntN(30) == 0 {
			alg = relimit()
		}
		limit := algo.MaxCost(alg)
		p1, p2, p3 := pgsql.Params(alg, time.Time{})
		if len(booked) > 0 && rng.IntN(6) == 0 {
			i := rng.IntN(len(booked))
			b := booked[i]
			booked = slices.Delete(booked, i, i+1)
			n := 1 + rng.Int64N(min(b.cost, limit))
			if rng.IntN(4) == 0 {
				n = 1 + rng.Int64N(limit)
			}
			history = append(
				history,
				fmt.Sprintf(
					"step %d at %d under %s: refund %d charged at %d",
					step,
					now.UnixMicro(),
					alg,
					n,
					b.at.UnixMicro(),
				),
			)
			var next []int64
			var keep *int64
			if err := p.QueryRow(ctx, "SELECT * FROM "+pgsql.Refund(alg.Kind())+"($1, $2, $3, $4, $5, $6, $7)",
				sqlState, now.UnixMicro(), b.at.UnixMicro(), n, p1, p2, p3).Scan(&next, &keep); err != nil {
				fail("refund: %v", err)
			}
			var changed bool
			goState, changed = algo.Refund(alg, goState, now, b.at, n)
			if changed != (next != nil) {
				fail("refund: sql wrote %v, go changed %v", next, changed)
			}
			if next != nil {
				if keep == nil {
					fail("refund: wrote %v with no keep", next)
				}
				bucketSame(alg, goState, next, *keep, now, fail)
				sqlState = next
				count.refunded++
			}
			continue
		}

		cost, maxWait := bucketRequest(rng, alg)
		history = append(
			history,
			fmt.Sprintf("step %d at %d under %s: cost %d within %v", step, now.UnixMicro(), alg, cost, maxWait),
		)
		var f fields
		var next []int64
		var keep, delayUS int64
		if err := p.QueryRow(ctx, "SELECT * FROM "+pgsql.Step(alg.Kind())+"($1, $2, $3, $4, $5, $6, $7)",
			sqlState, now.UnixMicro(), cost, maxWait.Microseconds(), p1, p2, p3).
			Scan(&f.Allowed, &f.Remaining, &f.Retry, &f.Reset, &f.At, &next, &keep, &delayUS); err != nil {
			fail("step: %v", err)
		}
		// As the Redis store turns reserve.lua's reply into a Result and a
		// delay (storeredis/reserve.go).
		got, err := f.Result(limit, 0)
		if err != nil {
			fail("step: %v", err)
		}
		got.SetCharged(alg, cost)
		delay := time.Duration(delayUS) * time.Microsecond

		before := goState
		var want algorithms.Result
		var wantDelay time.Duration
		if cost > 0 {
			goState, want, wantDelay = algo.Reserve(alg, goState, now, cost, maxWait)
		} else {
			goState, want = algo.Decide(alg, goState, now, cost)
		}
		history = append(history, fmt.Sprintf("  %+v delay %v", want, wantDelay))
		if got != want || delay != wantDelay {
			fail("step:\n  sql %+v delay %v\n  go  %+v delay %v", got, delay, want, wantDelay)
		}
		switch {
		case delay > 0:
			count.delayed++
		case !want.Allowed && maxWait > 0:
			count.beyond++
		}
		if next != nil {
			bucketSame(alg, goState, next, keep, now, fail)
			sqlState = next
			if len(next) != 4 || next[1] != 0 {
				count.unpacked++
			}
		} else {
			// Nothing written: the state stays as it was, and keep is how
			// long it still counts. bucket.lua leaves a denial of a cost
			// above 1 at the key's latest time unwritten, where Go writes
			// back what it read, less since and booked once they count no
			// more, which no refund can tell apart.
			if cost <= 1 || want.Allowed {
				wb, _, _ := bucketPack(alg, before)
				wa, _, _ := bucketPack(alg, goState)
				if wa != wb {
					fail("step wrote nothing, go changed the state from %v to %v", wb, wa)
				}
			}
			w, _, _ := bucketPack(alg, before)
			if want := max(w[0]-now.UnixMicro(), 0); keep != want {
				fail("step wrote nothing: keep %d, the state counts for %d more µs", keep, want)
			}
		}
		if cost > 0 && want.Allowed {
			booked = append(booked, bucketBooking{want.At, cost})
		}
	}
}

// bucketPack packs state, nil for none.
func bucketPack(alg algorithms.Algorithm, state algo.State) (algo.Words, int64, bool) {
	if state == nil {
		return algo.Words{}, 0, false
	}
	return algo.Pack(alg, state)
}

// bucketSame checks a state the SQL wrote, and its keep, against the Go
// state: the same words when Go's packs (whole µs, no rate count change),
// and in any case kept exactly until it stops counting.
func bucketSame(
	alg algorithms.Algorithm,
	goState algo.State,
	next []int64,
	keep int64,
	now time.Time,
	fail func(string, ...any),
) {
	w, tag, ok := bucketPack(alg, goState)
	if ok && !slices.Equal(next, []int64{w[0], 0, w[1], tag}) {
		fail("state %v, go's packs as %v tag %d", next, w, tag)
	}
	if keep != w[0]-now.UnixMicro() {
		fail("state %v kept %d µs, go's counts for %d more", next, keep, w[0]-now.UnixMicro())
	}
}

// bucketClock moves now: mostly forward by a fraction of an interval or of
// the capacity's refill time, at times far enough for bookings' turns to
// pass, and now and then stale, by up to 50ms or whole periods.
func bucketClock(rng *rand.Rand, alg algorithms.Algorithm, now time.Time) time.Time {
	period := algo.ScopeOf(alg).Window
	refill := algo.QuotaOf(alg).Window
	gap := func(upTo time.Duration) time.Duration {
		return time.Duration(rng.Int64N(max(int64(upTo), 1))).Truncate(time.Microsecond)
	}
	switch r := rng.IntN(20); {
	case r == 0:
		now = now.Add(-gap(50 * time.Millisecond))
	case r == 1:
		now = now.Add(-gap(3 * period))
	case r == 2:
		// the same microsecond
	case r < 5:
		now = now.Add(gap(3 * refill))
	case r < 10:
		now = now.Add(gap(refill / 10))
	default:
		now = now.Add(gap(period / time.Duration(max(algo.MaxCost(alg), 1)) * 2))
	}
	return now
}

// bucketRequest draws a request: mostly a booking of a small or any cost,
// with a longest wait up to a few capacities' refill times (log-uniform, so
// that short and long waits are both common) or 2^50µs, the longest a
// booking accepts; else a plain decision (a wait of 0) or an inspection.
func bucketRequest(rng *rand.Rand, alg algorithms.Algorithm) (cost int64, maxWait time.Duration) {
	limit := algo.MaxCost(alg)
	cost = 1 + rng.Int64N(limit)
	if rng.IntN(2) == 0 {
		cost = 1 + rng.Int64N(min(limit, 3))
	}
	switch r := rng.IntN(10); {
	case r == 0:
		return -rng.Int64N(limit + 1), 0 // an inspection
	case r == 1:
		return cost, 0
	case r == 2:
		return cost, time.Duration(1<<50) * time.Microsecond
	}
	hi := min(float64(3*algo.QuotaOf(alg).Window/time.Microsecond), 1<<50)
	us := int64(math.Exp(rng.Float64() * math.Log(max(hi, 1))))
	return cost, time.Duration(us) * time.Microsecond
}

// bucketTail is the end of a sequence's history.
func bucketTail(history []string) string {
	s := history[max(0, len(history)-12):]
	out := ""
	for _, h := range s {
		out += h + "\n"
	}
	return out
}

// TestBucketOddStates runs the bucket kinds' step and refund on states no
// decision writes: each must decide within range and never error.
func TestBucketOddStates(t *testing.T) {
	p, kinds := pool(t)
	kinds = bucketKinds(t, kinds)
	ctx := context.Background()
	states := []string{
		"{}", "{1,2,3}", "{1,2,3,4,5}", "{NULL,NULL,NULL,NULL}", "{NULL,NULL,NULL,NULL,NULL,NULL,NULL}",
		"[0:3]={1,2,3,4}", "{{1,2},{3,4}}",
		"{9223372036854775807,9223372036854775807,9223372036854775807,9223372036854775807}",
		"{9223372036854775807,9223372036854775807,9223372036854775807,9223372036854775807," +
			"9223372036854775807,9223372036854775807,9223372036854775807}",
		"{-9223372036854775808,-9223372036854775808,-9223372036854775808,-9223372036854775808," +
			"-9223372036854775808,-9223372036854775808,-9223372036854775808}",
		"{-9223372036854775808,1,-9223372036854775808,7,-9223372036854775808,-9223372036854775808,0}",
		"{9223372036854775807,-1,0,1125899906842624,1,9223372036854775807,0}",
	}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	for _, k := range kinds {
		for _, params := range []algorithms.Params{
			{Limit: 7, Window: time.Second, Burst: 3},
			{Limit: 1 << 50, Window: 3 * time.Microsecond, Burst: 1 << 50},
			{Limit: 3, Window: 1 << 50 * time.Microsecond, Burst: 3},
		} {
			alg, err := k.New(params)
			if err != nil {
				t.Fatal(err)
			}
			p1, p2, p3 := pgsql.Params(alg, time.Time{})
			limit := algo.MaxCost(alg)
			for _, s := range states {
				for _, c := range [][2]int64{{1, 0}, {limit, 0}, {limit, 1 << 50}, {0, 0}, {-limit, 0}, {2, 5}} {
					var f fields
					var next []int64
					var keep, delay int64
					err := p.QueryRow(ctx, "SELECT * FROM "+pgsql.Step(k)+"($1::bigint[], $2, $3, $4, $5, $6, $7)",
						s, now, c[0], c[1], p1, p2, p3).
						Scan(&f.Allowed, &f.Remaining, &f.Retry, &f.Reset, &f.At, &next, &keep, &delay)
					if err != nil {
						t.Fatalf("%s on %s, cost %d slack %d: %v", alg, s, c[0], c[1], err)
					}
					if _, err := f.Result(limit, now); err != nil || keep < 0 || delay < 0 {
						t.Errorf(
							"%s on %s, cost %d slack %d: %v, keep %d, delay %d",
							alg,
							s,
							c[0],
							c[1],
							err,
							keep,
							delay,
						)
					}
				}
				var next []int64
				var keep *int64
				if err := p.QueryRow(ctx, "SELECT * FROM "+pgsql.Refund(k)+"($1::bigint[], $2, $3, $4, $5, $6, $7)",
					s, now, now-1, limit, p1, p2, p3).Scan(&next, &keep); err != nil {
					t.Fatalf("%s: refund on %s: %v", alg, s, err)
				}
			}
		}
	}
}
