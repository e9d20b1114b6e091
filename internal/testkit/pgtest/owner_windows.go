package pgtest

import "os/exec"

type owner struct{}

// unprivileged is nil on Windows, where the tests do not run as root.
func unprivileged(string) (*owner, error) { return nil, nil }

func runAs(*exec.Cmd, *owner) {}

func killGroup(cmd *exec.Cmd) { cmd.Process.Kill() }
