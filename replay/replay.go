package replay

import (
	"context"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
)

// Replay runs w's requests in order through alg on s, each at its instant
// on w's simulated clock, and returns the accuracy of the decisions: how
// many were admitted, the most admitted for one key in any span of w's
// window against w.Limit, and how they differ from an exact sliding log's.
//
// alg need not enforce w's limit: replaying candidate limits against the
// limit w stands for shows which of them hold it. s must decide on the time
// it is given and should start empty.
func Replay(ctx context.Context, s store.Store, w *workload.Workload, alg algorithms.Algorithm) (Accuracy, error) {
	allowed, err := replayAll(ctx, s, w, alg, nil, 1)
	if err != nil {
		return Accuracy{}, err
	}
	return Measure(w, allowed, Exact(w)), nil
}

// replayAll decides every request of w on s, and returns whether each was
// admitted; it calls progress, when set, with the fraction done every
// progressEvery requests.
//
// With goroutines > 1 it decides on that many goroutines, each taking the
// keys k with k % goroutines its own and deciding their requests in the
// trace's order. A store decides on the time it is given and keys share no
// state, so the decisions are those of a replay in order; only the order
// in which different keys' decisions reach the store changes. progress may
// then be called from several goroutines.
func replayAll(
	ctx context.Context,
	s store.Store,
	w *workload.Workload,
	alg algorithms.Algorithm,
	progress func(float64),
	goroutines int,
) ([]bool, error) {
	allowed := make([]bool, len(w.Requests))
	decide := func(ctx context.Context, i int) error {
		r := w.Requests[i]
		res, err := s.Decide(ctx, store.Key{Name: w.Keys[r.Key]}, alg, w.Start.Add(r.At), r.Cost)
		if err != nil {
			return fmt.Errorf("request %d (key %s at %v): %w", i, w.Keys[r.Key], r.At, err)
		}
		allowed[i] = res.Allowed
		return nil
	}
	goroutines = min(goroutines, len(w.Keys))
	if goroutines <= 1 {
		for i := range w.Requests {
			if err := decide(ctx, i); err != nil {
				return nil, err
			}
			if progress != nil && i%progressEvery == progressEvery-1 {
				progress(float64(i+1) / float64(len(w.Requests)))
			}
		}
		return allowed, nil
	}
	// Each goroutine's share, as indices into w.Requests in order.
	shares := make([][]int, goroutines)
	for i, r := range w.Requests {
		g := int(r.Key) % goroutines
		shares[g] = append(shares[g], i)
	}
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for _, share := range shares {
		g.Go(func() error {
			for _, i := range share {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := decide(gctx, i); err != nil {
					return err
				}
				if n := done.Add(1); progress != nil && n%progressEvery == 0 {
					progress(float64(n) / float64(len(w.Requests)))
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return allowed, nil
}

// progressEvery is how many requests a replay decides between reports of
// its progress.
const progressEvery = 1 << 16

// StoreTarget is a Target for any store: every run calls open for a fresh,
// empty store. It cannot count store commands or measure memory, so Compare
// leaves those figures out for it.
func StoreTarget(name string, open func() store.Store) Target {
	return storeTarget{name: name, open: open}
}

type storeTarget struct {
	name string
	open func() store.Store
}

func (t storeTarget) Name() string   { return t.name }
func (t storeTarget) Parallel() bool { return false }
func (t storeTarget) Close()         {}

func (t storeTarget) Open(context.Context) (Instance, error) {
	return storeInstance{t.open()}, nil
}

type storeInstance struct{ s store.Store }

func (i storeInstance) Store() store.Store               { return i.s }
func (i storeInstance) Ops(context.Context) (Ops, error) { return Ops{Commands: -1}, nil }
func (i storeInstance) Close()                           {}

func (i storeInstance) BytesPerKey(
	context.Context,
	*workload.Workload,
	[]string,
	algorithms.Algorithm,
) (float64, int, error) {
	return 0, 0, nil
}
