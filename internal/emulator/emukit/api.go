package emukit

import (
	"context"
	"crypto/subtle"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/hydragpu/terraform-provider-hydra/internal/simulation"
)

// ServeAt is Serve for an API below a path prefix ("/v1"): the base URL it returns ends in prefix, as
// a client's base URL does.
func ServeAt(addr string, h http.Handler, prefix string) (baseURL string, stop func(context.Context) error, err error) {
	baseURL, stop, err = Serve(addr, h)
	if err != nil {
		return "", nil, err
	}
	return baseURL + prefix, stop, nil
}

// Reply is one answer, built while an emulator's state is locked and written after.
type Reply struct {
	Status      int
	ContentType string
	Header      http.Header
	Body        []byte
}

// Write writes the reply: its headers, its Content-Type when it has a body, its status and its body.
func (rep Reply) Write(w http.ResponseWriter) {
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if len(rep.Body) > 0 && rep.ContentType != "" {
		w.Header().Set("Content-Type", rep.ContentType)
	}
	w.WriteHeader(rep.Status)
	if len(rep.Body) > 0 {
		w.Write(rep.Body) //nolint:errcheck
	}
}

// TakeReply fires one armed request fault (rate limit first, then server error) as the API's own
// answer: tooMany for a 429, with the Retry-After header added, and serverError(status) for a 5xx of
// serverStatus. ok is false when none is armed.
func TakeReply(f *simulation.Faults, serverStatus int, tooMany Reply, serverError func(status int) Reply) (rep Reply, ok bool) {
	status, header := f.Take(serverStatus)
	switch {
	case status == http.StatusTooManyRequests:
		tooMany.Header = header
		return tooMany, true
	case status != 0:
		return serverError(status), true
	}
	return Reply{}, false
}

// LockedAPI serves an API whose answers are built under the emulator's state lock (Reply) and written
// after the armed latency.
type LockedAPI struct {
	// BasePath prefixes every endpoint; a request outside it gets NotFound.
	BasePath string
	NotFound Reply
	// BadBody answers a request whose body cannot be read (up to 1 MiB is read).
	BadBody Reply
	// Answer builds the answer to one request, given its path below BasePath ("/" + the path trimmed of
	// slashes) and its body, and the latency to wait before writing it.
	Answer func(r *http.Request, path string, body []byte) (rep Reply, latency time.Duration, err error)
	// StateError answers a request when the state could not be read or saved.
	StateError func(err error) Reply
}

// ServeHTTP answers one request. Nothing is written when the client leaves during the latency.
func (a LockedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, a.BasePath)
	if !ok {
		a.NotFound.Write(w)
		return
	}
	path = "/" + strings.Trim(path, "/")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		a.BadBody.Write(w)
		return
	}
	rep, latency, err := a.Answer(r, path, body)
	if err != nil {
		rep = a.StateError(err)
	}
	if !simulation.Delay(r.Context(), latency) {
		return
	}
	rep.Write(w)
}

// Gate is the front of an API that writes its answers itself: under the state lock (withFaults) it
// takes the armed latency and one request fault, waits the latency, and answers a fault, or a state
// that could not be read (stateErr not nil, status 500), with fail in the API's own error shape. It
// reports whether the request goes on to the API; false means it has been answered, or the client has
// gone.
func Gate(w http.ResponseWriter, r *http.Request, withFaults func(fn func(f *simulation.Faults)) error, serverStatus int,
	fail func(w http.ResponseWriter, status int, stateErr error)) bool {
	var status int
	var header http.Header
	var latency time.Duration
	if err := withFaults(func(f *simulation.Faults) {
		latency = time.Duration(f.Latency)
		status, header = f.Take(serverStatus)
	}); err != nil {
		fail(w, http.StatusInternalServerError, err)
		return false
	}
	if !simulation.Delay(r.Context(), latency) {
		return false
	}
	if status != 0 {
		maps.Copy(w.Header(), header)
		fail(w, status, nil)
		return false
	}
	return true
}

// BearerToken is the token of the request's "Authorization: Bearer <token>" header; ok is false without
// one.
func BearerToken(r *http.Request) (token string, ok bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// BearerIn reports whether the request's bearer token is one of keys.
func BearerIn(r *http.Request, keys []string) bool {
	tok, ok := BearerToken(r)
	return ok && OneOf(tok, keys)
}

// OneOf reports whether key is one of keys (compared in constant time).
func OneOf(key string, keys []string) bool {
	found := false
	for _, k := range keys {
		if subtle.ConstantTimeCompare([]byte(key), []byte(k)) == 1 {
			found = true
		}
	}
	return found
}

// ByMethod runs the handler handlers holds for method, or notAllowed (the cloud's 405) when it holds none.
func ByMethod(method string, handlers map[string]func(), notAllowed func()) {
	if h, ok := handlers[method]; ok {
		h()
		return
	}
	notAllowed()
}
