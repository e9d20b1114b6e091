package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// A store keeps one state per Key.String (and algorithm and scope).
func ExampleKey_String() {
	fmt.Println(store.Key{Namespace: "api", Name: "user:1001"})
	fmt.Println(store.Key{Name: "user:1001"})
	// Output:
	// api:user:1001
	// user:1001
}

// Every store's errors come in the classes package store documents, so a
// caller tells them apart with errors.Is, whichever store it runs on. Being
// limited is Result.Allowed == false, never an error, and no error may be
// treated as allowed.
func Example_errorClasses() {
	classify := func(err error) string {
		switch {
		case err == nil:
			return "decided"
		case errors.Is(err, store.ErrMaybeDecided):
			return "outcome unknown: retry only with the same request ID"
		case errors.Is(err, store.ErrUnavailable):
			return "store failed: nothing was decided"
		case errors.Is(err, store.ErrUnsupported):
			return "the store cannot run this algorithm: a programming error"
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return "the caller's context ended"
		default:
			return "invalid input"
		}
	}

	limiter, err := ratewise.New(storememory.New(), algorithms.FixedWindow{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	_, err = limiter.Allow(ctx, "user:1001")
	fmt.Println(classify(err))
	_, err = limiter.AllowN(ctx, "user:1001", 4)
	fmt.Println(classify(err), errors.Is(err, algorithms.ErrCostExceedsLimit))
	_, err = limiter.Allow(ratewise.WithRequestID(ctx, ""), "user:1001")
	fmt.Println(classify(err), errors.Is(err, store.ErrInvalidRequestID))
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = limiter.Allow(canceled, "user:1001")
	fmt.Println(classify(err))

	// A store that talks to a server wraps its failures in the classes: a
	// connection lost before the request was sent, and one lost after it
	// was sent and before the answer came, which may have been decided.
	lost := fmt.Errorf("%w: mystore: %w", store.ErrUnavailable, io.ErrUnexpectedEOF)
	fmt.Println(classify(lost))
	fmt.Println(classify(fmt.Errorf("%w (%w)", lost, store.ErrMaybeDecided)))
	// Output:
	// decided
	// invalid input true
	// invalid input true
	// the caller's context ended
	// store failed: nothing was decided
	// outcome unknown: retry only with the same request ID
}
