package algo_test

import (
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// TestEveryKindDecides runs every function of package algo on every kind of
// the registry: each picks the kind's step by a type switch, and a kind one
// of them misses panics here rather than on a store.
func TestEveryKindDecides(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			alg, err := algo.Nominal(k, 10, time.Second, 5)
			if err != nil {
				t.Fatal(err)
			}
			if err := algo.CheckDecision(alg, t0, 1); err != nil {
				t.Fatal(err)
			}
			if again, err := k.New(algo.ParamsOf(alg)); err != nil || again != alg {
				t.Errorf("New(ParamsOf(%v)) = %v, %v", alg, again, err)
			}
			// The calendar's nominal period for a second is a day, which
			// lasts up to 25 hours.
			window, scope := time.Second, "1s"
			if algo.FamilyOf(k) == algo.FamilyCalendar {
				window, scope = 25*time.Hour, "day"
			} else if algo.TakesSubWindows(k) {
				scope = "1s/5"
			}
			if q := algo.QuotaOf(alg); q.Limit != 10 || q.Window != window || algo.MaxCost(alg) != 10 {
				t.Errorf("QuotaOf = %+v, MaxCost = %d; want 10 per %v", q, algo.MaxCost(alg), window)
			}
			if s := algo.ScopeOf(alg).String(); s != scope {
				t.Errorf("ScopeOf = %q, want %q", s, scope)
			}
			if got := algo.WithQuotaLimit(alg, 7); algo.MaxCost(got) != 7 || algo.ScopeOf(got) != algo.ScopeOf(alg) {
				t.Errorf("WithQuotaLimit(7) = %v", got)
			}
			state, res := algo.Decide(alg, nil, t0, 1)
			if !res.Allowed || res.Remaining != 9 {
				t.Fatalf("Decide = %+v", res)
			}
			if !algo.Keeps(alg, state, t0, 0) {
				t.Errorf("an inspection does not keep the state")
			}
			if _, ok := algo.Refund(alg, state, t0, t0, 1); !ok {
				t.Errorf("Refund gave nothing back")
			}
			if algo.Reserves(alg) {
				if _, res, _ := algo.Reserve(alg, nil, t0, 1, time.Second); !res.Allowed {
					t.Errorf("Reserve = %+v", res)
				}
			}
			if !algo.Packs(alg) {
				return
			}
			state, _ = algo.Decide(alg, nil, t0, 1)
			w, tag, ok := algo.Pack(alg, state)
			if !ok {
				t.Fatalf("Pack: no packed form")
			}
			back := algo.Unpack(alg, w, tag, nil)
			if w2, tag2, _ := algo.Pack(alg, algo.Clone(alg, back)); w2 != w || tag2 != tag {
				t.Errorf("Pack(Clone(Unpack(Pack))) = %v %d, want %v %d", w2, tag2, w, tag)
			}
			if res, _ := algo.Inspect(alg, w, tag, t0, 0); res.Remaining != 9 {
				t.Errorf("Inspect = %+v", res)
			}
			d := algo.Derive(alg)
			var packed algorithms.Result
			if _, _, ok := algo.DecidePacked(alg, &d, &w, tag, t0, 1, &packed); !ok || packed.Remaining != 8 {
				t.Errorf("DecidePacked = %+v, %v", packed, ok)
			}
		})
	}
}

// TestEnvelope: the bounds package algo states are the ones algorithms'
// Validate applies, which keeps its own unexported.
func TestEnvelope(t *testing.T) {
	for _, c := range []struct {
		what       string
		ok, over   algorithms.Algorithm
		wantOK     bool
		wantOverOK bool
	}{
		{"limit", algorithms.FixedWindow{Limit: algo.EnvelopeMaxLimit, Window: time.Second},
			algorithms.FixedWindow{Limit: algo.EnvelopeMaxLimit + 1, Window: time.Second}, true, false},
		{"window", algorithms.FixedWindow{Limit: 1, Window: algo.EnvelopeMaxWindow},
			algorithms.FixedWindow{Limit: 1, Window: algo.EnvelopeMaxWindow + time.Microsecond}, true, false},
		{"compact log", algorithms.CompactLog{Limit: algo.EnvelopeCompactLogMaxLimit, Window: time.Second},
			algorithms.CompactLog{Limit: algo.EnvelopeCompactLogMaxLimit + 1, Window: time.Second}, true, false},
	} {
		if err := c.ok.Validate(); (err == nil) != c.wantOK {
			t.Errorf("%s: %v at the bound: %v", c.what, c.ok, err)
		}
		if err := c.over.Validate(); (err == nil) != c.wantOverOK {
			t.Errorf("%s: %v past the bound: %v", c.what, c.over, err)
		}
	}
	last := time.UnixMicro(algo.EnvelopeMaxUnixMicro)
	if algo.CheckTime(last) != nil || algo.CheckTime(last.Add(time.Microsecond)) == nil {
		t.Errorf("CheckTime does not end at EnvelopeMaxUnixMicro")
	}
}

// TestCalendarScope: a calendar window's scope is its period and its zone's
// name, whichever *time.Location spells the zone.
func TestCalendarScope(t *testing.T) {
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	berlin, again, york := load("Europe/Berlin"), load("Europe/Berlin"), load("America/New_York")
	scope := func(period string, loc *time.Location) algo.Scope {
		return algo.ScopeOf(algorithms.CalendarWindow{Limit: 1, Period: period, Location: loc})
	}
	if got := scope("month", berlin).String(); got != "month@Europe/Berlin" {
		t.Errorf("month in Berlin: %q", got)
	}
	if scope("month", nil) != scope("month", time.UTC) || scope("month", nil).String() != "month" {
		t.Errorf("month in UTC: %q and %q", scope("month", nil), scope("month", time.UTC))
	}
	if scope("week", berlin) != scope("week", again) {
		t.Errorf("two loads of Berlin: %v and %v", scope("week", berlin), scope("week", again))
	}
	for _, other := range []algo.Scope{scope("week", york), scope("day", berlin), scope("week", nil)} {
		if other == scope("week", berlin) {
			t.Errorf("%q shares the scope of a week in Berlin", other)
		}
	}
}
