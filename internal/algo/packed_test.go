package algo_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// history drives two copies of one key's state through the same random
// requests, under two limits of one scope that take turns in runs, with a
// clock that sometimes steps back, and calls probe before each request with
// both copies, equal. probe may decide on them, the same on each.
func history(
	t *testing.T,
	k *algorithms.Kind,
	limit int64,
	probe func(alg algorithms.Algorithm, a, b *algo.State, now time.Time),
) {
	t.Helper()
	var algs []algorithms.Algorithm
	for _, l := range []int64{limit, 3 * limit} {
		alg, err := algo.Nominal(k, l, time.Second, 4)
		if err != nil {
			t.Fatal(err)
		}
		algs = append(algs, alg)
	}
	rng := rand.New(rand.NewPCG(2, uint64(limit)))
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var a, b algo.State
	alg := algs[0]
	for range 2000 {
		switch r := rng.IntN(10); {
		case r < 6:
			now = now.Add(time.Duration(rng.Int64N(60_000_000)))
		case r < 7:
			now = now.Add(-time.Duration(rng.Int64N(30_000_000)))
		}
		if rng.IntN(8) == 0 {
			alg = algs[rng.IntN(2)]
		}
		probe(alg, &a, &b, now)
		cost := 1 + rng.Int64N(algo.MaxCost(alg))
		if rng.IntN(2) == 0 {
			cost = 1
		}
		a, _ = algo.Decide(alg, a, now, cost)
		b, _ = algo.Decide(alg, b, now, cost)
	}
}

// When Keeps says so, a denial of cost 1 returns the state as it was, and
// the Result an inspection as a request of cost 1 returns; and it says so
// whenever the denial would change nothing. Likewise for an inspection,
// which leaves its state as it was either way and says by its returned
// state whether it changed it (a rate count converted).
func TestKeeps(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		for _, limit := range []int64{7, 20} {
			t.Run(fmt.Sprint(k.String(), "/", limit), func(t *testing.T) {
				var denials, kept int
				history(t, k, limit, func(alg algorithms.Algorithm, a, b *algo.State, now time.Time) {
					keeps := algo.Keeps(alg, *a, now, 1)
					for _, cost := range []int64{0, -1} {
						if *b == nil {
							break
						}
						before := reflect.ValueOf(*b).Elem().Interface()
						kept, _ := algo.Decide(alg, *b, now, cost)
						if changed := !reflect.DeepEqual(kept, *b); algo.Keeps(alg, *b, now, cost) == changed {
							t.Fatalf(
								"at %v: Keeps for cost %d is %v, and the inspection returned %+v for %+v",
								now,
								cost,
								!changed,
								kept,
								*b,
							)
						}
						if after := reflect.ValueOf(*b).Elem().Interface(); !reflect.DeepEqual(after, before) {
							t.Fatalf(
								"at %v: an inspection of cost %d changed the state it was given: %+v, was %+v",
								now,
								cost,
								after,
								before,
							)
						}
					}
					_, inspected := algo.Decide(alg, *b, now, -1)
					after, res := algo.Decide(alg, *a, now, 1)
					unchanged := reflect.DeepEqual(after, *b)
					if !res.Allowed && keeps != unchanged {
						t.Fatalf(
							"at %v: Keeps %v, but the denial left the state unchanged: %v (%+v, was %+v)",
							now,
							keeps,
							unchanged,
							after,
							*b,
						)
					}
					*a = after
					*b, _ = algo.Decide(alg, *b, now, 1)
					if res.Allowed {
						return
					}
					denials++
					if keeps {
						kept++
						if res != inspected {
							t.Fatalf("at %v: a denial of cost 1 gave %+v, an inspection as one %+v", now, res, inspected)
						}
					}
				})
				if kept == 0 || kept == denials && algo.FamilyOf(k) == algo.FamilyLog {
					t.Fatalf("%d denials, %d kept the state: the test must see both", denials, kept)
				}
			})
		}
	}
}

// A state that packs unpacks to itself, Inspect on the words returns what
// Decide returns on the state, DecidePacked decides and packs as Decide
// and Pack do; the first word is when the state stops
// counting: from then on it decides as no state.
func TestPackRoundTrip(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		for _, limit := range []int64{7, 20} {
			t.Run(fmt.Sprint(k.String(), "/", limit), func(t *testing.T) {
				packed, unpacked, checkedPacked := 0, 0, 0
				history(t, k, limit, func(alg algorithms.Algorithm, pa, pb *algo.State, now time.Time) {
					a, b := *pa, *pb
					if !algo.Packs(alg) || a == nil {
						return
					}
					w, tag, ok := algo.Pack(alg, a)
					if !ok {
						if w[0] > 0 {
							unpacked++
							stopsCounting(t, alg, a, now, time.UnixMicro(w[0]))
						}
						return
					}
					packed++
					if got := algo.Unpack(alg, w, tag, nil); !reflect.DeepEqual(got, a) {
						t.Fatalf("Unpack(Pack(%+v)) = %+v", a, got)
					}
					for _, cost := range []int64{0, -1, -algo.MaxCost(alg)} {
						after, want := algo.Decide(alg, b, now, cost)
						got, keeps := algo.Inspect(alg, w, tag, now, cost)
						if got != want {
							t.Fatalf("Inspect(%v, cost %d) = %+v, Decide: %+v", now, cost, got, want)
						}
						if changed := !reflect.DeepEqual(after, b); keeps == changed {
							t.Fatalf("Inspect(%v, cost %d) keeps %v, but Decide returned %+v for %+v", now, cost, keeps, after, b)
						}
					}
					// DecidePacked on the words decides and packs as Decide
					// and Pack on the state.
					d := algo.Derive(alg)
					for _, cost := range []int64{1, 2, algo.MaxCost(alg)} {
						after, want := algo.Decide(alg, algo.Unpack(alg, w, tag, nil), now, cost)
						var got algorithms.Result
						gw, gtag, ok := algo.DecidePacked(alg, &d, &w, tag, now, cost, &got)
						if got != want {
							t.Fatalf("DecidePacked(%v, cost %d) = %+v, Decide: %+v", now, cost, got, want)
						}
						ww, wtag, wok := algo.Pack(alg, after)
						if ok != wok || ok && (gw != ww || gtag != wtag) {
							t.Fatalf(
								"DecidePacked(%v, cost %d) packed %v %d %v, Decide then Pack %v %d %v",
								now,
								cost,
								gw,
								gtag,
								ok,
								ww,
								wtag,
								wok,
							)
						}
						checkedPacked++
					}
					stopsCounting(t, alg, algo.Unpack(alg, w, tag, nil), now, time.UnixMicro(w[0]))
				})
				if algo.Packs(mustNominal(t, k)) {
					// And on no state.
					alg := mustNominal(t, k)
					d := algo.Derive(alg)
					now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
					after, want := algo.Decide(alg, nil, now, 1)
					var got algorithms.Result
					gw, gtag, ok := algo.DecidePacked(alg, &d, nil, 0, now, 1, &got)
					ww, wtag, wok := algo.Pack(alg, after)
					if got != want || ok != wok || gw != ww || gtag != wtag {
						t.Fatalf(
							"DecidePacked on no state = %v %d %+v %v, Decide then Pack %v %d %+v %v",
							gw,
							gtag,
							got,
							ok,
							ww,
							wtag,
							want,
							wok,
						)
					}
				}
				if algo.Packs(mustNominal(t, k)) && checkedPacked == 0 {
					t.Fatal("DecidePacked was never compared: the test tests nothing")
				}
				if algo.Packs(mustNominal(t, k)) && packed == 0 {
					t.Fatal("no state packed: the test tests nothing")
				}
				if algo.FamilyOf(k) == algo.FamilyBucket && unpacked == 0 {
					t.Fatal("every state packed: the test tests no state that counts longer")
				}
			})
		}
	}
}

// stopsCounting checks that from end on, decided at now or later, state
// decides as no state, and a refund of any charge finds nothing to give
// back.
func stopsCounting(t *testing.T, alg algorithms.Algorithm, state algo.State, now, end time.Time) {
	t.Helper()
	for _, at := range []time.Time{end, end.Add(time.Second)} {
		if at.Before(now) {
			continue
		}
		for _, charged := range []time.Time{now, at.Add(-time.Millisecond), at} {
			if _, ok := algo.Refund(alg, state, at, charged, 1); ok {
				t.Fatalf("at %v, from when %+v stops counting: a refund of a charge at %v gave something back", at, state, charged)
			}
		}
		_, want := algo.Decide(alg, nil, at, 1)
		if _, got := algo.Decide(alg, shallowCopy(state), at, 1); got != want {
			t.Fatalf("at %v, from when %+v stops counting: %+v, with no state %+v", at, state, got, want)
		}
	}
}

// shallowCopy returns a copy of *state, for a state that is a pointer to a
// struct of plain values, which a decision may write in place.
func shallowCopy(state algo.State) algo.State {
	v := reflect.ValueOf(state).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	return c.Interface().(algo.State)
}

func mustNominal(t *testing.T, k *algorithms.Kind) algorithms.Algorithm {
	alg, err := algo.Nominal(k, 1, time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	return alg
}
