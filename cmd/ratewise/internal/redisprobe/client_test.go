package redisprobe_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/redisprobe"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// go-redis's defaults raise CheckClient's warnings, each with the setting
// that passes; warnings alone are not a failure.
func TestClientSettings(t *testing.T) {
	budget := 100 * time.Millisecond
	c := newClient(t, redistest.Standalone(t).Addr)
	rep := redisprobe.Run(context.Background(), c, budget)
	got := byCheck(rep)["client settings"]
	if want := len(storeredis.CheckClient(c, budget)); got.n != want || want == 0 {
		t.Fatalf("client settings: %d findings, want CheckClient's %d:\n%s", got.n, want, report(rep))
	}
	for _, f := range rep.Findings {
		if f.Check != "client settings" {
			continue
		}
		if f.Status != redisprobe.StatusWarning || f.Change == "" || strings.Contains(f.Change, "see docs") ||
			strings.HasPrefix(f.Found, "storeredis:") {
			t.Errorf(
				"client setting %q: status %v, change %q; want a warning naming the setting to use",
				f.Found,
				f.Status,
				f.Change,
			)
		}
	}
	for _, w := range []string{"ContextTimeoutEnabled: true", "MaxRetries: -1", "ReadTimeout: 50ms", "DialTimeout: 30ms"} {
		if !strings.Contains(got.change, w) {
			t.Errorf("client settings: no change says %q:\n%s", w, got.change)
		}
	}
	if rep.Worst() != redisprobe.StatusWarning {
		t.Errorf("worst status %v, want warning:\n%s", rep.Worst(), report(rep))
	}
}

// wrapped is a client CheckClient does not inspect: go-redis's client
// behind a type of the app's own, as a tracing wrapper may be.
type wrapped struct{ *redis.Client }

// CheckClient returns nothing for a client it does not know, which the
// probe reports as not checked, never as nothing to change, even when the
// client inside has go-redis's defaults; the other checks run as on any
// client.
func TestClientSettingsOfAnUnknownClient(t *testing.T) {
	c := wrapped{newClient(t, redistest.Standalone(t).Addr)}
	rep := redisprobe.Run(context.Background(), c, 100*time.Millisecond)
	expect(t, rep,
		want{"server", redisprobe.StatusOK, "Redis ", ""},
		want{"keys", redisprobe.StatusOK, "share a hash tag", ""},
		want{"client settings", redisprobe.StatusOK, "not checked: CheckClient does not know a redisprobe_test.wrapped", ""})
	if got, want := byCheck(rep)["client settings"].n, 1; got != want {
		t.Errorf("client settings: got %d findings, want %d:\n%s", got, want, report(rep))
	}
}
