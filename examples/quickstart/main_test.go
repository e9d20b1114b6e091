package main

// The quickstart's output, which README.md shows: the fourth request within
// the minute is denied and told to wait the minute out.
func Example() {
	main()
	// Output:
	// allowed=true remaining=2 retry-after=0s
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=1m0s
}
