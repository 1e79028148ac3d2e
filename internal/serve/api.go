package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rtscope/rtscope/internal/outfile"
)

// DefaultSocket is the control API's unix socket (rtscope ctl): in a
// directory only root can write, mode 0600, so only root can connect.
const DefaultSocket = "/run/rtscope/serve.sock"

// The API's paths, relative to the socket (docs/serve.md).
const (
	PathTargets = "/v1/targets" // GET: State; POST, DELETE: a TargetConfig
	PathSLO     = "/v1/slo"     // POST, DELETE: {"slo": SPEC}
	PathReload  = "/v1/reload"  // POST
	PathWindows = "/v1/windows" // GET: ArchiveList; GET PathWindows/NAME: one ArchivedWindow
)

// SLORequest is the body of POST and DELETE PathSLO.
type SLORequest struct {
	SLO string `json:"slo"`
}

// APIError is the body of a failed request.
type APIError struct {
	Error string `json:"error"`
}

// listenSocket listens on the control socket at path: its directory must
// be root's alone (created 0700 when missing), a stale socket of a dead
// agent is replaced, a live one is an error.
func listenSocket(path string) (net.Listener, error) {
	if err := outfile.PrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("--socket %s: %w; put the socket in such a directory (default %s), or give --socket \"\" for no control API", path, err, DefaultSocket)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("--socket %s exists and is not a socket: give the path of a socket, or of nothing yet", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close() // only probing
			return nil, fmt.Errorf("--socket %s: another agent listens there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("--socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	// The directory is root's alone, so nobody connects before the chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close() // failing anyway
		return nil, fmt.Errorf("--socket %s: %w", path, err)
	}
	return ln, nil
}

// apiHandler serves the control API of c, and the archive's windows when
// a is not nil.
func apiHandler(c *Control, a *Archive) http.Handler {
	mux := http.NewServeMux()
	state := func(w http.ResponseWriter) {
		st, err := c.State()
		if err != nil {
			fail(w, http.StatusServiceUnavailable, err)
			return
		}
		reply(w, st)
	}
	mux.HandleFunc("GET "+PathTargets, func(w http.ResponseWriter, r *http.Request) { state(w) })
	target := func(w http.ResponseWriter, r *http.Request, op func(TargetConfig) error) {
		var t TargetConfig
		if err := decode(r, &t); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		if err := op(t); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		state(w)
	}
	mux.HandleFunc("POST "+PathTargets, func(w http.ResponseWriter, r *http.Request) { target(w, r, c.AddTarget) })
	mux.HandleFunc("DELETE "+PathTargets, func(w http.ResponseWriter, r *http.Request) { target(w, r, c.RemoveTarget) })
	bound := func(w http.ResponseWriter, r *http.Request, op func(string) error) {
		var s SLORequest
		if err := decode(r, &s); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		if err := op(s.SLO); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		state(w)
	}
	mux.HandleFunc("POST "+PathSLO, func(w http.ResponseWriter, r *http.Request) { bound(w, r, c.AddSLO) })
	mux.HandleFunc("DELETE "+PathSLO, func(w http.ResponseWriter, r *http.Request) { bound(w, r, c.RemoveSLO) })
	mux.HandleFunc("POST "+PathReload, func(w http.ResponseWriter, r *http.Request) {
		if err := c.Reload(); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		state(w)
	})
	mux.HandleFunc("GET "+PathWindows, func(w http.ResponseWriter, r *http.Request) {
		if a == nil {
			fail(w, http.StatusNotFound, errors.New("no archive: start the agent with --archive DIR"))
			return
		}
		reply(w, a.List())
	})
	mux.HandleFunc("GET "+PathWindows+"/{name}", func(w http.ResponseWriter, r *http.Request) {
		if a == nil {
			fail(w, http.StatusNotFound, errors.New("no archive: start the agent with --archive DIR"))
			return
		}
		win, err := a.Get(r.PathValue("name"))
		if err != nil {
			fail(w, http.StatusNotFound, err)
			return
		}
		reply(w, win)
	})
	return mux
}

// decode reads a small JSON body (at most 64 KiB) into v, unknown fields refused.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to do
}

func fail(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(APIError{Error: err.Error()}) // the client went away: nothing to do
}

// Client talks to an agent's control socket (rtscope ctl).
type Client struct {
	Socket string
	http   *http.Client
}

// NewClient returns a client of the agent listening on socket.
func NewClient(socket string) *Client {
	return &Client{Socket: socket, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}}}}
}

// dialError says why the agent could not be reached: a socket only root
// (or its owner) may connect to is not "no agent".
func (c *Client) dialError(err error) error {
	var ne *net.OpError
	if !errors.As(err, &ne) {
		return err
	}
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		owner := "root"
		if fi, err := os.Stat(c.Socket); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
				owner = fmt.Sprintf("root or uid %d, its owner", st.Uid)
			}
		}
		return fmt.Errorf("--socket %s: permission denied: only %s may control the agent; run rtscope ctl as root (sudo rtscope ctl ...)", c.Socket, owner)
	}
	return fmt.Errorf("no agent on --socket %s: %w", c.Socket, ne.Err)
}

// Do sends method path with body (JSON, nil for none) and decodes the
// reply into out (nil: discarded). An error reply is returned as an error.
func (c *Client) Do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://rtscope"+path, rd)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.dialError(err)
	}
	defer resp.Body.Close() //nolint:errcheck // read to the end below
	if resp.StatusCode != http.StatusOK {
		var e APIError
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("agent answered %s", resp.Status)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
