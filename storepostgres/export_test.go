package storepostgres

import (
	"context"
	"runtime"
)

// Sweep runs one sweep now, as every 64th write starts one, once no other
// sweep runs, and returns how many rows it deleted.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	for !s.sweep.running.CompareAndSwap(false, true) {
		runtime.Gosched()
	}
	defer s.sweep.running.Store(false)
	return s.sweepOnce(ctx)
}
