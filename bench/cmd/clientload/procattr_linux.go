package main

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd if this command dies, so an
// interrupted run leaves no hog behind.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
