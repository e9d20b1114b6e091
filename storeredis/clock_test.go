package storeredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

func TestClockOffset(t *testing.T) {
	ctx := context.Background()

	// A real Redis on this machine shares its clock: the offset is within
	// the reading's uncertainty, plus a millisecond for rounding.
	s := storeredis.New(newClient(t, redistest.Standalone(t).Addr))
	offset, unc, err := s.ClockOffset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if unc <= 0 || offset.Abs() > unc+time.Millisecond {
		t.Errorf("same machine: offset %v ± %v, want 0 within the uncertainty", offset, unc)
	}

	// miniredis's TIME is whatever it is set to: 90 s ahead, then 2 s behind.
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	ms := storeredis.New(c)
	for _, want := range []time.Duration{90 * time.Second, -2 * time.Second} {
		m.SetTime(time.Now().Add(want))
		offset, unc, err := ms.ClockOffset(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := (offset - want).Abs(); d > unc+10*time.Millisecond {
			t.Errorf("clock set %v ahead: offset %v ± %v", want, offset, unc)
		}
	}

	// An unreachable Redis is an error, never an offset.
	m.Close()
	if _, _, err := ms.ClockOffset(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("closed server: err %v, want ErrUnavailable", err)
	}
}
