package coalesce

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// call is a test's call: its name, the queue it joins, and what send made
// of it.
type call struct {
	name, queue string
	round       int // the round trip that sent it, from 1
}

// sender is a send function that records each batch and, while held,
// blocks until released, so that a test decides when a round trip ends.
type sender struct {
	mu       sync.Mutex
	batches  [][]string
	ctxs     []context.Context
	rounds   int
	held     map[string]chan struct{} // by queue, while held
	started  chan string              // a batch's first call's queue, as it starts
	deadline time.Time
}

func newSender() *sender {
	return &sender{held: map[string]chan struct{}{}, started: make(chan string, 100)}
}

func (s *sender) hold(queue string) {
	s.mu.Lock()
	s.held[queue] = make(chan struct{})
	s.mu.Unlock()
}

func (s *sender) release(queue string) {
	s.mu.Lock()
	close(s.held[queue])
	delete(s.held, queue)
	s.mu.Unlock()
}

func (s *sender) send(ctx context.Context, calls []call) {
	s.mu.Lock()
	s.rounds++
	round := s.rounds
	var names []string
	for i := range calls {
		names = append(names, calls[i].name)
		calls[i].round = round
	}
	s.batches = append(s.batches, names)
	s.ctxs = append(s.ctxs, ctx)
	wait := s.held[calls[0].queue]
	s.mu.Unlock()
	s.started <- calls[0].queue
	if wait != nil {
		<-wait
	}
}

// waitFor polls co's Stats until ready holds, for at most a second.
func waitFor[C any](t *testing.T, co *Coalescer[C], what string, ready func(alone, queued, senders int) bool) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(100 * time.Microsecond) {
		alone, queued, senders := co.Stats()
		if ready(alone, queued, senders) {
			return
		}
		if time.Since(start) > time.Second {
			t.Fatalf("never reached %s: alone=%d queued=%d senders=%d", what, alone, queued, senders)
		}
	}
}

// TestAloneUpToTheLimit: calls go alone while fewer than the limit are in
// flight alone and nothing is queued; past the limit they queue; once a
// caller alone has sent and nothing waits, the next goes alone again.
func TestAloneUpToTheLimit(t *testing.T) {
	s := newSender()
	co := New(2, 0, s.send, nil)
	for i := range 2 {
		if _, queued := co.Join(call{name: fmt.Sprint("alone", i)}, time.Time{}); queued {
			t.Fatalf("call %d of a limit of 2 queued", i+1)
		}
	}
	s.hold("")
	var tickets []Ticket[call]
	for _, name := range []string{"third", "fourth"} {
		tk, queued := co.Join(call{name: name}, time.Time{})
		if !queued {
			t.Fatalf("the %s call went alone with 2 in flight alone, a limit of 2", name)
		}
		tickets = append(tickets, tk)
		<-s.started // its batch is taken: nothing waits
	}
	co.Sent()
	if _, queued := co.Join(call{name: "fifth"}, time.Time{}); queued {
		t.Fatal("a call queued with 1 in flight alone and nothing waiting")
	}
	if alone, queued, senders := co.Stats(); alone != 2 || queued != 0 || senders != 2 {
		t.Fatalf("alone=%d queued=%d senders=%d, want 2, 0 and 2", alone, queued, senders)
	}
	s.release("")
	for i, tk := range tickets {
		if c, err := tk.Wait(context.Background()); err != nil || c.round != i+1 {
			t.Fatalf("the %s call: %+v, %v; want it sent in round trip %d", c.name, c, err, i+1)
		}
	}
}

// TestQueuedCallsShareARoundTrip holds the first batch's round trip: the
// calls that queue meanwhile go together in the next, in the order they
// queued, and each caller gets its own call back.
func TestQueuedCallsShareARoundTrip(t *testing.T) {
	s := newSender()
	co := New(0, 0, s.send, nil) // every call queues
	s.hold("")
	first, _ := co.Join(call{name: "first"}, time.Time{})
	<-s.started
	// A second goroutine sends the next batch: hold that one too, so that
	// the rest queue behind it.
	second, _ := co.Join(call{name: "second"}, time.Time{})
	<-s.started
	var tickets []Ticket[call]
	for i := range 5 {
		tk, queued := co.Join(call{name: fmt.Sprint("q", i)}, time.Time{})
		if !queued {
			t.Fatal("a call went alone with a limit of 0")
		}
		tickets = append(tickets, tk)
	}
	waitFor(
		t,
		co,
		"five queued behind two senders",
		func(_, queued, senders int) bool { return queued == 5 && senders == 2 },
	)
	s.release("")
	for _, tk := range append([]Ticket[call]{first, second}, tickets...) {
		if _, err := tk.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := [][]string{{"first"}, {"second"}, {"q0", "q1", "q2", "q3", "q4"}}
	if fmt.Sprint(s.batches) != fmt.Sprint(want) {
		t.Fatalf("batches %v, want %v", s.batches, want)
	}
	for i, tk := range tickets {
		if c, _ := tk.Wait(context.Background()); c.name != fmt.Sprint("q", i) || c.round != 3 {
			t.Fatalf("ticket %d got %+v, want q%d of round trip 3", i, c, i)
		}
	}
	waitFor(t, co, "no sender left", func(_, _, senders int) bool { return senders == 0 })
}

// TestQueuesByName: with queueOf, a queue whose round trip is held holds
// up neither the calls of another queue nor the goroutines that send them.
func TestQueuesByName(t *testing.T) {
	s := newSender()
	co := New(0, 0, s.send, func(c call) string { return c.queue })
	s.hold("stalled")
	var stalled []Ticket[call]
	for i := range 3 {
		tk, _ := co.Join(call{name: fmt.Sprint("s", i), queue: "stalled"}, time.Time{})
		stalled = append(stalled, tk)
		if i < 2 {
			<-s.started // each of the queue's two senders holds one
		}
	}
	for i := range 10 {
		tk, _ := co.Join(call{name: fmt.Sprint("l", i), queue: "live"}, time.Time{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := tk.Wait(ctx)
		cancel()
		if err != nil || c.name != fmt.Sprint("l", i) {
			t.Fatalf("a call on the live queue: %+v, %v; want it sent while the other queue is held", c, err)
		}
	}
	if _, queued, _ := co.Stats(); queued != 1 {
		t.Fatalf("%d queued, want the stalled queue's third call", queued)
	}
	s.release("stalled")
	for _, tk := range stalled {
		if _, err := tk.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, co, "every queue forgotten", func(_, _, senders int) bool { return senders == 0 })
	co.mu.Lock()
	defer co.mu.Unlock()
	if len(co.queues) != 0 {
		t.Fatalf("%d idle queues kept", len(co.queues))
	}
}

// TestWaitHonoursItsContext: a queued caller whose context ends returns
// at once with its error, while its round trip is still held; the others
// in its batch still get their outcome.
func TestWaitHonoursItsContext(t *testing.T) {
	s := newSender()
	co := New(0, 0, s.send, nil)
	s.hold("")
	tk, _ := co.Join(call{name: "held"}, time.Time{})
	<-s.started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tk.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended context: %v, want context.Canceled", err)
	}
	s.release("")
	if c, err := tk.Wait(context.Background()); err != nil || c.round != 1 {
		t.Fatalf("once sent: %+v, %v", c, err)
	}
}

// TestBatchContext: a batch is sent with no caller's context, but with the
// latest of its calls' deadlines when every call has one, and none when
// one has none.
func TestBatchContext(t *testing.T) {
	early, late := time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)
	for _, tt := range []struct {
		name      string
		deadlines []time.Time
		want      time.Time
	}{
		{"all with deadlines", []time.Time{late, early}, late},
		{"one without", []time.Time{early, {}, late}, time.Time{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSender()
			co := New(0, 0, s.send, nil)
			s.hold("")
			first, _ := co.Join(call{name: "first"}, time.Time{})
			<-s.started
			second, _ := co.Join(call{name: "second"}, time.Time{})
			<-s.started
			var tickets []Ticket[call]
			for i, d := range tt.deadlines {
				tk, _ := co.Join(call{name: fmt.Sprint(i)}, d)
				tickets = append(tickets, tk)
			}
			s.release("")
			for _, tk := range append([]Ticket[call]{first, second}, tickets...) {
				tk.Wait(context.Background())
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			got, ok := s.ctxs[2].Deadline()
			if ok != !tt.want.IsZero() || !got.Equal(tt.want) {
				t.Fatalf("the batch's deadline: %v (%v), want %v", got, ok, tt.want)
			}
		})
	}
}

// TestBatchesAreBounded: with a bound of 2, five calls queued behind held
// round trips go in batches of 2, 2 and 1, in the order they queued, and
// Counts counts them.
func TestBatchesAreBounded(t *testing.T) {
	s := newSender()
	co := New(0, 2, s.send, nil)
	s.hold("")
	var tickets []Ticket[call]
	for i := range 7 {
		tk, _ := co.Join(call{name: fmt.Sprint("c", i)}, time.Time{})
		tickets = append(tickets, tk)
		if i < 2 {
			<-s.started // each of the two senders holds a batch of one
		}
	}
	waitFor(
		t,
		co,
		"five queued behind two senders",
		func(_, queued, senders int) bool { return queued == 5 && senders == 2 },
	)
	s.release("")
	for _, tk := range tickets {
		if _, err := tk.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	got := fmt.Sprint(s.batches)
	s.mu.Unlock()
	// The two senders take the queued batches in turn, oldest first.
	if want := "[[c0] [c1] [c2 c3] [c4 c5] [c6]]"; got != want {
		t.Fatalf("batches %v, want %v", got, want)
	}
	if got, want := co.Counts(), (Counts{Batches: 5, Batched: 7}); got != want {
		t.Fatalf("Counts %+v, want %+v", got, want)
	}
}

// TestCloseWaitsForSenders: Close returns only once the queued calls have
// been sent and their senders have returned, and every call after it goes
// alone.
func TestCloseWaitsForSenders(t *testing.T) {
	s := newSender()
	co := New(0, 0, s.send, nil)
	s.hold("")
	tk, _ := co.Join(call{name: "held"}, time.Time{})
	<-s.started
	closed := make(chan struct{})
	go func() {
		co.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a batch was being sent")
	case <-time.After(20 * time.Millisecond):
	}
	s.release("")
	<-closed
	if _, err := tk.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, senders := co.Stats(); senders != 0 {
		t.Fatalf("%d senders after Close", senders)
	}
	if _, queued := co.Join(call{name: "after"}, time.Time{}); queued {
		t.Fatal("a call queued after Close")
	}
}
