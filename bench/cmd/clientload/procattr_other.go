//go:build !linux

package main

import "os/exec"

// killWithParent does nothing where the kernel has no parent-death signal:
// the command kills its hogs itself when it returns.
func killWithParent(*exec.Cmd) {}
