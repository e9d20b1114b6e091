package fault_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the suite fails them by the
	// thousand on purpose, and counts what matters itself.
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
