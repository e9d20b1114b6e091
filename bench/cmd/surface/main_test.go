package main

import "testing"

func TestCountDir(t *testing.T) {
	c, ok, err := countDir("testdata/fixture")
	if err != nil || !ok {
		t.Fatalf("countDir: %v, %v", ok, err)
	}
	want := count{consts: 2, vars: 1, funcs: 2, types: 2, methods: 1, fields: 4}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}
