package redistest

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd if the test process dies, so a
// crashed or interrupted test leaves no redis-server behind.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
