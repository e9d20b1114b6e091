package storeredis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// ErrNotReplicated is wrapped, with store.ErrUnavailable and
// store.ErrMaybeDecided, by the error of a write that ran on its master but
// that fewer replicas than WithReplicas asks for acknowledged in time (see
// WithReplicas).
var ErrNotReplicated = errors.New("storeredis: write not acknowledged by enough replicas")

// WithReplicas makes every script the store runs wait, before the call
// returns, until at least n replicas of the key's master have acknowledged
// its writes, for at most timeout. An admission the store reports then
// survives the failover of its master to a replica that acknowledged it.
// Without it replication is asynchronous, and a failover forgets the
// admissions its master had not yet sent, which are then admitted again.
//
// The store sends Redis's WAIT in the same round trip as the script, right
// after it, on the same connection: WAIT counts the writes of its own
// connection, and Redis refuses it inside a script. With
// WithReplicas(1, 100*time.Millisecond) and a master with one replica, a
// decision returns once the replica has applied it, one replica round
// trip after the script; with the replica down, or behind by more than
// 100 ms, it fails after 100 ms. docs/redis.md ("Durability") gives the
// cost per decision that BenchmarkReplicas measured.
//
// When fewer than n replicas acknowledge in time, the write has run on the
// master and stands there, but would not survive its failover: the call
// fails with the zero Result and an error wrapping ErrNotReplicated,
// store.ErrUnavailable and store.ErrMaybeDecided (the caller's context
// error in place of ErrUnavailable if ctx ended meanwhile), never as a
// plain success. The caller's failure mode answers it as any failure. A
// request with an ID (ratewise.WithRequestID) retried with that ID gets its
// first outcome: the record of the ID is written by the same script, and
// replicates with it. The retry waits as the first call did, although it
// writes nothing: Redis moves a connection's replication offset, which
// WAIT waits for, to the master's after every command, so the replayed
// script's WAIT waits for the write it replays, from any connection.
//
// Every script waits, inspections included (a peek may convert a key's
// state to a changed rate, which writes), so with too few replicas
// inspections fail as writes do. Reading Redis's clock (ClockOffset),
// which writes nothing, does not wait.
// Decisions are not coalesced (WithCoalescing has no effect): each goes
// with its own WAIT.
//
// It works with *redis.Client (standalone, or Sentinel's NewFailoverClient)
// and *redis.ClusterClient. WAIT has no key to be routed by, so on a
// cluster the round trip goes to the node client of the key's master as the
// client's slot map has it (ClusterClient.MasterForKey); a MOVED or ASK
// reply, or a network error, has the client reload its slot map, and the
// call fails with store.ErrUnavailable. With any other client, such as
// *redis.Ring, every call that runs a script fails with an error wrapping
// store.ErrUnsupported.
//
// n < 1 turns the option off. timeout is rounded up to a whole millisecond,
// WAIT's unit, and is at least 1 ms (WAIT's 0 would wait forever). Keep it
// below the client's ReadTimeout and the callers' deadlines: the wait is
// read like any reply, and a read timeout fails the call with
// store.ErrUnavailable and store.ErrMaybeDecided before WAIT answers. WAIT
// does not reach the disk: a write every copy of which is lost, as when
// every node restarts without persistence, is forgotten all the same.
func WithReplicas(n int, timeout time.Duration) Option {
	return optionFunc(func(s *Store) {
		if n < 1 {
			s.replicas = replicaWait{}
			return
		}
		ms := max((timeout+time.Millisecond-1)/time.Millisecond, 1)
		s.replicas = replicaWait{n: n, timeout: ms * time.Millisecond}
	})
}

// replicaWait is WithReplicas's setting: how many replicas a script's
// writes wait for (0 when off), and for how long, in whole milliseconds.
type replicaWait struct {
	n       int
	timeout time.Duration
}

// replicated is run with WithReplicas: the script, then WAIT, in one
// pipeline on the connection of the keys' master, and the script again
// with EVAL, also followed by WAIT, if Redis had not cached it. A write
// that ran but that too few replicas acknowledged fails, wrapping
// ErrNotReplicated and store.ErrMaybeDecided.
func (s *Store) replicated(ctx context.Context, sc *redis.Script, keys []string, args []any) (any, error) {
	var node *redis.Client
	var cluster *redis.ClusterClient
	switch c := s.client.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		key := ""
		if len(keys) > 0 {
			key = keys[0] // every key of a call shares its hash tag
		}
		var err error
		if node, err = c.MasterForKey(ctx, key); err != nil {
			c.ReloadState(ctx)
			return nil, s.failure(ctx, err) // nothing was sent
		}
		cluster = c
	default:
		return nil, fmt.Errorf("%w: storeredis: WithReplicas needs a *redis.Client or a *redis.ClusterClient, got "+
			"%T", store.ErrUnsupported, s.client)
	}
	send := func(eval bool) (*redis.Cmd, *redis.IntCmd) {
		pipe := node.Pipeline()
		var cmd *redis.Cmd
		if eval {
			cmd = sc.Eval(ctx, pipe, keys, args...)
		} else {
			cmd = sc.EvalSha(ctx, pipe, keys, args...)
		}
		// Milliseconds exist here only: WAIT's unit.
		wait := redis.NewIntCmd(ctx, "wait", s.replicas.n, s.replicas.timeout.Milliseconds())
		_ = pipe.Process(ctx, wait)
		_, _ = pipe.Exec(ctx) // each command keeps its own error
		return cmd, wait
	}
	cmd, wait := send(false)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// The script did not run, so the first WAIT waited for nothing of
		// this call's; with too few replicas it still took the whole
		// timeout, and a call that finds its script missing (after a
		// restart or a failover) takes twice the timeout to fail.
		cmd, wait = send(true)
	}
	reply, err := cmd.Result()
	if err != nil {
		if cluster != nil && staleSlots(err) {
			cluster.ReloadState(ctx)
		}
		return nil, s.decisionFailure(ctx, err)
	}
	// The script ran: whatever WAIT says, the write may stand on the
	// master alone.
	acked, err := wait.Result()
	if err != nil {
		return nil, storecheck.MaybeDecided(s.failure(ctx, err))
	}
	if acked < int64(s.replicas.n) {
		err := fmt.Errorf(
			"%w: %d of %d replicas acknowledged it within %v",
			ErrNotReplicated,
			acked,
			s.replicas.n,
			s.replicas.timeout,
		)
		return nil, storecheck.MaybeDecided(s.failure(ctx, err))
	}
	return reply, nil
}

// staleSlots reports whether err, from a master as a cluster client's slot
// map has it, says the map may be out of date: a MOVED or ASK reply, or a
// network error, since a dead master answers no MOVED and only a reload
// finds its promoted replica.
func staleSlots(err error) bool {
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	if _, ok := redis.IsAskError(err); ok {
		return true
	}
	var reply redis.Error
	return !errors.As(err, &reply)
}
