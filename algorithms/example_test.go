package algorithms_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// A configuration file or a command line names an algorithm and its
// parameters; Lookup and Kind.New build it without naming its type.
func ExampleKind_New() {
	kind, err := algorithms.Lookup("gcra")
	if err != nil {
		panic(err)
	}
	alg, err := kind.New(algorithms.Params{Limit: 10, Window: time.Second, Burst: 20})
	if err != nil {
		panic(err)
	}
	fmt.Println(alg)

	// A name not in the registry, and a parameter the algorithm does not
	// take, are errors, not ignored.
	_, err = algorithms.Lookup("leaky_bucket")
	fmt.Println(errors.Is(err, algorithms.ErrInvalidAlgorithm))
	fw, _ := algorithms.Lookup("fixed_window")
	_, err = fw.New(algorithms.Params{Limit: 100, Window: time.Minute, Burst: 20})
	fmt.Println(errors.Is(err, algorithms.ErrInvalidAlgorithm))
	// Output:
	// gcra 10/1s burst 20
	// true
	// true
}

// Kinds lists every algorithm once, in the order tools show them.
func ExampleKinds() {
	for _, k := range algorithms.Kinds() {
		fmt.Println(k.String())
	}
	// Output:
	// fixed_window
	// sliding_log
	// compact_log
	// sliding_window
	// token_bucket
	// gcra
	// calendar_window
}

// Validate's errors wrap ErrInvalidAlgorithm, which callers match with
// errors.Is; the message names the parameter and its value.
func ExampleSlidingWindow_Validate() {
	for _, alg := range []algorithms.Algorithm{
		algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 6},
		algorithms.SlidingWindow{Limit: 0, Window: time.Minute, SubWindows: 6},
		algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 7},
		algorithms.SlidingWindow{Limit: 100, Window: 1500 * time.Nanosecond, SubWindows: 1},
	} {
		err := alg.Validate()
		switch {
		case err == nil:
			fmt.Println(alg, "is valid")
		case errors.Is(err, algorithms.ErrInvalidAlgorithm):
			fmt.Println(err)
		}
	}
	// Output:
	// sliding_window 100/1m in 6 sub-windows is valid
	// ratewise: invalid algorithm: limit must be > 0, got 0
	// ratewise: invalid algorithm: window 1m0s does not split evenly into 7 sub-windows of at least 1ms
	// ratewise: invalid algorithm: window must be a positive whole number of microseconds, got 1.5µs
}

// ParseRate reads a rate as people write it, and Rate.String writes it
// back in a form ParseRate reads.
func ExampleParseRate() {
	for _, s := range []string{"100/min", "5000/h", "7/1500ms", "ten per second", "0/s"} {
		r, err := algorithms.ParseRate(s)
		switch {
		case err == nil:
			fmt.Printf("%s: %d per %v, written %s\n", s, r.Count, r.Period, r)
		case errors.Is(err, algorithms.ErrInvalidAlgorithm):
			fmt.Println(err)
		}
	}
	r, _ := algorithms.ParseRate("100/min")
	fmt.Println(algorithms.TokenBucket{Capacity: 20, Refill: r})
	// Output:
	// 100/min: 100 per 1m0s, written 100/1m
	// 5000/h: 5000 per 1h0m0s, written 5000/1h
	// 7/1500ms: 7 per 1.5s, written 7/1500ms
	// ratewise: invalid algorithm: rate "ten per second": want a count per period, such as 100/min
	// ratewise: invalid algorithm: a rate's count must be > 0, got 0
	// token_bucket 100/1m burst 20
}
