package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// PrivateDir creates dir (mode 0700) or checks that the one there is a
// directory only root can write. rtscope keeps there what another user
// must neither hold nor replace: the scenarios' CPU claims, the agent's
// control socket. Under a world-writable directory any user could create
// the file first.
func PrivateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	owner := int64(-1)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = int64(st.Uid)
	}
	var why string
	switch {
	case !fi.IsDir():
		why = "is not a directory"
	case owner != 0:
		why = fmt.Sprintf("belongs to uid %d", owner)
	case fi.Mode().Perm()&0o022 != 0:
		why = fmt.Sprintf("is writable by other users (mode %v)", fi.Mode())
	default:
		return nil
	}
	// Say what is required: the directory may be /tmp, which is not to be
	// removed or changed.
	return fmt.Errorf("%s %s: rtscope keeps files there that no other user may create or replace, so it needs a directory owned by root that only root can write", dir, why)
}
