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
	if !fi.IsDir() || owner != 0 || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s must be a directory only root can write (it is %v, owner %d): remove it", dir, fi.Mode(), owner)
	}
	return nil
}
