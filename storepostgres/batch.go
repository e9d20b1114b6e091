package storepostgres

import (
	"time"

	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/coalesce"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// defaultCoalescing is how many decisions go to the database alone at
// once by default, before the others share transactions (WithCoalescing).
const defaultCoalescing = 4

// maxBatch is the most decisions a batch holds. A batch holds every row it
// locks until it commits, so a longer one keeps a hot row from the
// decisions of other batches longer; and 64 fill a round trip's worth of
// the server's time on a hot key.
const maxBatch = 64

// batchLockTimeout is how long a batch waits for a row another transaction
// holds before the decision on it leaves the batch (see WithCoalescing):
// far above the few milliseconds another batch holds a row, and below the
// deadlines limiters run with.
const batchLockTimeout = "100ms"

// errAlone is the outcome of a batched decision that must be sent again
// alone: its row was held by another transaction past batchLockTimeout,
// and the batch rolled back its attempt.
var errAlone = errors.New("storepostgres: sent again alone")

// WithCoalescing lets up to n concurrent decisions each go to the database
// alone, at once, and makes the rest share transactions: while n are in
// flight, a decision queues, and up to two goroutines per algorithm kind
// send what is queued, a batch of up to 64 decisions per round trip,
// decided in one transaction by the kind's batch function, each decision
// as the statement alone decides it, in the order they queued for each
// key. A batch of n decisions costs one round trip and one commit, and
// PL/pgSQL prepares the algorithm's step once for all of them; on a hot
// key, whose row lock serialises its decisions, that is what makes them
// fast. A decision with a request ID, a booking, a set, a refund and a
// reset always go alone. n <= 0 sends every decision alone.
//
// One decision's failure is its own: a decision that raises an error in a
// batch fails alone, with store.ErrUnavailable, and the rest decide. A
// decision whose row another transaction holds locked for longer than
// 100ms leaves its batch and is sent again alone, where it waits as long
// as its caller's deadline allows, as without coalescing: a row stuck
// behind a lock delays the rest of a batch by about 100ms. A round trip
// that fails (the connection lost, the latest of the callers' deadlines
// passed) fails every decision in it.
func WithCoalescing(n int) Option {
	return optionFunc(func(s *Store) { s.coalesce = n })
}

// decision is a decision that may share a transaction.
type decision struct {
	key   []byte
	alg   algorithms.Algorithm
	now   *int64 // nil for the server's clock
	cost  int64
	reply []int64 // its six integers, which sendBatch sets
	err   error   // its outcome in a batch, which sendBatch sets
}

func (s *Store) newCoalescer() *coalesce.Coalescer[*decision] {
	// A queue per kind: a batch runs one kind's batch function.
	return coalesce.New(s.coalesce, maxBatch, s.sendBatch, func(d *decision) string { return d.alg.Kind().String() })
}

// sendBatch decides ds, all of one kind, in one call of its batch
// function, ordered by key, and sets each decision's reply or error.
func (s *Store) sendBatch(ctx context.Context, ds []*decision) {
	order := make([]*decision, len(ds))
	copy(order, ds)
	slices.SortStableFunc(order, func(a, b *decision) int { return bytes.Compare(a.key, b.key) })
	n := len(order)
	keys := make([][]byte, n)
	nows := make([]*int64, n)
	costs := make([]int64, n)
	p1s, p2s := make([]int64, n), make([]int64, n)
	p3s := make([]*int64, n)
	for i, d := range order {
		keys[i], nows[i], costs[i] = d.key, d.now, d.cost
		var caller time.Time // the system clock's, on the server's clock
		if d.now != nil {
			caller = time.UnixMicro(*d.now)
		}
		p1s[i], p2s[i], p3s[i] = pgsql.Params(d.alg, caller)
	}
	var replies []int64
	var failed []*string
	err := s.queryRow(
		ctx,
		"SELECT * FROM ratewise."+order[0].alg.Kind().String()+"_decide_batch($1, $2, $3, $4, $5, $6, $7, $8)",
		[]any{keys, nows, costs, p1s, p2s, p3s, s.grace, s.lockTimeout},
		&replies,
		&failed,
	)
	if err == nil && (len(replies) != 6*n || len(failed) != n) {
		err = malformed(replies, "want %d integers and %d errors for %d decisions, got %d errors", 6*n, n, n, len(failed))
	}
	for i, d := range order {
		switch {
		case err != nil:
			d.err = s.failure(ctx, err, d.cost > 0)
		case failed[i] == nil:
			d.reply = replies[6*i : 6*i+6]
		case strings.HasPrefix(*failed[i], lockNotAvailable):
			d.err = errAlone
		default:
			// The batch rolled the decision back: nothing was decided.
			d.err = fmt.Errorf("%w: postgres: %s", store.ErrUnavailable, *failed[i])
		}
	}
	s.sweep.tick(s, len(ds))
}

// lockNotAvailable starts the error of a decision whose lock the batch
// waited for in vain: its SQLSTATE.
const lockNotAvailable = "55P03 "

// shared decides d through the coalescer: it returns d's reply, and false
// when d must go alone (fewer than the limit are in flight), which the
// caller then reports with s.co.Sent; or errAlone, when d left its batch
// and its caller must send it alone.
func (s *Store) shared(ctx context.Context, d *decision) (reply []int64, queued bool, err error) {
	deadline, _ := ctx.Deadline()
	t, queued := s.co.Join(d, deadline)
	if !queued {
		return nil, false, nil
	}
	if _, err := t.Wait(ctx); err != nil {
		// The caller gave up; its decision may still be sent.
		if d.cost > 0 {
			return nil, true, storecheck.MaybeDecided(err)
		}
		return nil, true, err
	}
	return d.reply, true, d.err
}
