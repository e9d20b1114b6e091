//go:build !linux

package redistest

import "os/exec"

// killWithParent does nothing where there is no parent-death signal: a
// test process that is killed outright leaves its redis-server running
// until someone stops it. Stop and Main still stop every server the
// process started.
func killWithParent(*exec.Cmd) {}
