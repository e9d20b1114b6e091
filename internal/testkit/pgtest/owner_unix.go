//go:build unix

package pgtest

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// owner is the unprivileged user a server runs as under root.
type owner struct{ uid, gid uint32 }

// unprivileged returns nil when the test does not run as root. Under root,
// which initdb refuses, it returns the user "postgres", or "nobody", and
// hands dir to it.
func unprivileged(dir string) (*owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var u *user.User
	var err error
	for _, name := range []string{"postgres", "nobody"} {
		if u, err = user.Lookup(name); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	o := &owner{uint32(uid), uint32(gid)}
	err = filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, int(o.uid), int(o.gid))
	})
	return o, err
}

// runAs makes cmd run as o, if o is not nil, in a process group of its
// own, and die with the test process on Linux.
func runAs(cmd *exec.Cmd, o *owner) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	killWithParent(cmd.SysProcAttr)
	if o != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: o.uid, Gid: o.gid}
		cmd.Dir = os.TempDir()
	}
}

// killGroup kills cmd's process group, which runAs made: postgres and the
// processes it forked, which hold its shared memory until they exit.
func killGroup(cmd *exec.Cmd) {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		cmd.Process.Kill()
	}
}
