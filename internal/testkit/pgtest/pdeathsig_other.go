//go:build unix && !linux

package pgtest

import "syscall"

func killWithParent(*syscall.SysProcAttr) {}
