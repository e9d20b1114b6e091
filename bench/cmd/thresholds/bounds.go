package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A bound is one row of the "Bounds" table in docs/benchmarks.md:
//
//	| `gcra.bytes_per_key` | <= | 80 | why |
//
// Keeping the bounds in the document, not in code, means -check fails when
// the document's numbers stop being true.
type bound struct {
	name  string
	op    string // "<=" or ">="
	value float64
}

// readBounds parses the table rows whose first cell is a backquoted name in
// the section whose heading starts with "## Bounds".
func readBounds(path string) ([]bound, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bounds []bound
	sc := bufio.NewScanner(f)
	inBounds := false
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "## ") {
			inBounds = strings.HasPrefix(text, "## Bounds")
			continue
		}
		if !inBounds {
			continue
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		if len(cells) < 3 {
			continue
		}
		name := strings.TrimSpace(cells[0])
		if !strings.HasPrefix(name, "`") || !strings.HasSuffix(name, "`") {
			continue
		}
		op := strings.TrimSpace(cells[1])
		if op != "<=" && op != ">=" {
			return nil, fmt.Errorf("%s:%d: operator %q, want <= or >=", path, line, op)
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(cells[2]), ",", ""), 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		bounds = append(bounds, bound{name: strings.Trim(name, "`"), op: op, value: v})
	}
	if len(bounds) == 0 {
		return nil, fmt.Errorf("%s lists no bounds", path)
	}
	return bounds, sc.Err()
}

// checkBounds prints each bound's verdict and reports whether all held. A
// bound whose measurement -quick skipped is reported, not failed; in a full
// run a missing measurement fails.
func checkBounds(bounds []bound, m measured, quick bool) bool {
	fmt.Println()
	fmt.Println("## Bounds (-check)")
	fmt.Println()
	fmt.Println("| bound | measured | verdict |")
	fmt.Println("| --- | --- | --- |")
	ok := true
	for _, b := range bounds {
		v, found := m[b.name]
		verdict := "holds"
		switch {
		case !found && quick:
			verdict = "not measured in -quick"
		case !found:
			verdict, ok = "**NOT MEASURED**", false
		case b.op == "<=" && v > b.value, b.op == ">=" && v < b.value:
			verdict, ok = fmt.Sprintf("**BROKEN**: want %s %g", b.op, b.value), false
		}
		fmt.Printf("| `%s` %s %g | %.6g | %s |\n", b.name, b.op, b.value, v, verdict)
	}
	return ok
}
