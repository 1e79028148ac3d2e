package target

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// ParseUser reads --user USER[:GROUP] (names or numbers) into the
// credential a launched command runs with: the user's uid, the group given
// or the user's primary group, and the user's supplementary groups.
func ParseUser(spec string) (*syscall.Credential, error) {
	name, group, hasGroup := strings.Cut(spec, ":")
	if name == "" {
		return nil, fmt.Errorf("--user %q: want USER[:GROUP]", spec)
	}
	u, err := lookupUser(name)
	if err != nil {
		return nil, fmt.Errorf("--user %q: %w", spec, err)
	}
	c, err := credential(u)
	if err != nil {
		return nil, fmt.Errorf("--user %q: %w", spec, err)
	}
	if hasGroup {
		g, err := lookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("--user %q: %w", spec, err)
		}
		c.Gid = g
	}
	return c, nil
}

// DefaultUser is who a launched command runs as without --user: the user
// who ran sudo (SUDO_UID, SUDO_GID), as they would have run it themselves;
// nil (root, as rtscope) otherwise.
func DefaultUser() (*syscall.Credential, error) {
	uid, ok := os.LookupEnv("SUDO_UID")
	if !ok || uid == "" {
		return nil, nil
	}
	u, err := lookupUser(uid)
	if err != nil {
		return nil, fmt.Errorf("SUDO_UID=%s: %w (give --user)", uid, err)
	}
	c, err := credential(u)
	if err != nil {
		return nil, fmt.Errorf("SUDO_UID=%s: %w (give --user)", uid, err)
	}
	if gid := os.Getenv("SUDO_GID"); gid != "" {
		g, err := strconv.ParseUint(gid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("SUDO_GID=%s is not a number", gid)
		}
		c.Gid = uint32(g)
	}
	return c, nil
}

// lookupUser finds a user by name or number; a number without an entry in
// the user database is taken as is.
func lookupUser(name string) (*user.User, error) {
	if u, err := user.Lookup(name); err == nil {
		return u, nil
	}
	if _, err := strconv.ParseUint(name, 10, 32); err == nil {
		if u, err := user.LookupId(name); err == nil {
			return u, nil
		}
		return &user.User{Uid: name, Gid: name}, nil
	}
	return nil, fmt.Errorf("no user %q", name)
}

func lookupGroup(name string) (uint32, error) {
	if g, err := user.LookupGroup(name); err == nil {
		name = g.Gid
	}
	n, err := strconv.ParseUint(name, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("no group %q", name)
	}
	return uint32(n), nil
}

func credential(u *user.User) (*syscall.Credential, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("uid %q is not a number", u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("gid %q is not a number", u.Gid)
	}
	c := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if u.Username != "" {
		ids, _ := u.GroupIds()
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil {
				c.Groups = append(c.Groups, uint32(g))
			}
		}
	}
	if c.Groups == nil {
		c.Groups = []uint32{} // none, not root's: NoSetGroups stays false
	}
	return c, nil
}
