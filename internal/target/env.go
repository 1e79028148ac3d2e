package target

import (
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// ReexecMarker is set in the environment of rtscope's re-exec with
// GODEBUG=asyncpreemptoff=1; its value is the user's own GODEBUG entry
// ("GODEBUG=..."), or empty when there was none.
const ReexecMarker = "RTSCOPE_REEXEC_GODEBUG"

// ReexecEnv returns the environment to re-exec rtscope with: GODEBUG with
// asyncpreemptoff=1 added to the user's settings, and the marker. ok is
// false when rtscope already runs so (or was re-executed once: never
// loop, even if GODEBUG was overridden).
func ReexecEnv(environ []string) (env []string, ok bool) {
	orig := ""
	for _, kv := range environ {
		if strings.HasPrefix(kv, ReexecMarker+"=") {
			return nil, false
		}
		if strings.HasPrefix(kv, "GODEBUG=") {
			orig = kv
		}
	}
	settings := strings.TrimPrefix(orig, "GODEBUG=")
	for _, s := range strings.Split(settings, ",") {
		if s == "asyncpreemptoff=1" {
			return nil, false
		}
	}
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	// Last wins in Go's GODEBUG parsing: the user's settings, then ours.
	if settings != "" {
		settings += ","
	}
	return append(env, "GODEBUG="+settings+"asyncpreemptoff=1", ReexecMarker+"="+orig), true
}

// UserEnv returns the environment the user started rtscope with, for the
// commands it launches: the re-exec's GODEBUG and marker undone.
func UserEnv(environ []string) []string {
	orig, reexec := "", false
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, ReexecMarker+"="); ok {
			orig, reexec = v, true
		}
	}
	if !reexec {
		return environ
	}
	var env []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "GODEBUG=") && !strings.HasPrefix(kv, ReexecMarker+"=") {
			env = append(env, kv)
		}
	}
	if orig != "" {
		env = append(env, orig)
	}
	return env
}

// LoginEnv returns env for a command that runs as cred (nil: as rtscope,
// env unchanged), with the user's HOME, USER and LOGNAME, as runuser and
// sudo's -i give them: launched under sudo, a command would otherwise
// write its dotfiles under /root and find no USER. A uid without an entry
// in the user database keeps env as it is.
func LoginEnv(env []string, cred *syscall.Credential) []string {
	if cred == nil {
		return env
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(cred.Uid), 10))
	if err != nil {
		return env
	}
	set := map[string]string{"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); set[k] == "" {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"HOME", "USER", "LOGNAME"} {
		out = append(out, k+"="+set[k])
	}
	return out
}
