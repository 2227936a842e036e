package realos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// aptProxyPort is the port of the machine's own loopback its apt is pointed at (aptProxyConf): the
// test's apt proxy listens there, inside the machine's network namespace.
const aptProxyPort = 3142

// aptProxyFile is where a machine's apt configuration for the proxy is written.
const aptProxyFile = "etc/apt/apt.conf.d/00hydra-realos-proxy"

// aptProxyConf is the apt configuration a machine gets before it boots: its network is its own, with
// no route out, so apt reaches Debian's mirror through the test's proxy on the machine's loopback.
var aptProxyConf = fmt.Sprintf("// hydra real-OS test: this machine's network is its own (no route out); apt reaches Debian's\n"+
	"// mirror through the test's proxy on the machine's loopback, which keeps downloaded packages.\n"+
	"Acquire::http::Proxy \"http://127.0.0.1:%d/\";\n", aptProxyPort)

// aptProxy is a forward HTTP proxy for apt, to the image's archive hosts only. Files that never change under
// their URL (packages under /pool/, indexes under /by-hash/) are kept in dir and served from there to
// later machines, as apt-cacher does; everything else (InRelease, which says what is current) is
// fetched from the mirror each time. apt checks every file against the signed InRelease as usual.
type aptProxy struct {
	dir    string
	hosts  []string
	client *http.Client
}

// newAptProxy makes a proxy to the archives at mirrors (http:// URLs).
func newAptProxy(cache string, mirrors ...string) (*aptProxy, error) {
	p := &aptProxy{dir: filepath.Join(cache, "apt"), client: &http.Client{Timeout: 10 * time.Minute}}
	for _, m := range mirrors {
		u, err := url.Parse(m)
		if err != nil || u.Host == "" || u.Scheme != "http" {
			return nil, fmt.Errorf("realos: mirror %q is not an http:// URL", m)
		}
		p.hosts = append(p.hosts, u.Host)
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	return p, nil
}

// immutable says whether the file at path never changes: a package in the pool, or an index named by
// its hash.
func immutable(path string) bool {
	return strings.Contains(path, "/pool/") || strings.Contains(path, "/by-hash/")
}

func (p *aptProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u := r.URL
	if !slices.Contains(p.hosts, u.Host) || (u.Scheme != "" && u.Scheme != "http") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.Error(w, "hydra real-OS apt proxy: only GET and HEAD to "+strings.Join(p.hosts, ", "), http.StatusForbidden)
		return
	}
	if immutable(u.Path) && r.Method == http.MethodGet {
		p.serveCached(w, r)
		return
	}
	resp, err := p.fetch(r.Context(), r.Method, u.String(), r.Header)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	for _, h := range []string{"Content-Type", "Content-Length", "Last-Modified", "ETag"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *aptProxy) fetch(ctx context.Context, method, u string, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"If-Modified-Since", "If-None-Match", "Range", "If-Range"} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	return p.client.Do(req)
}

// serveCached serves an immutable file from the cache, fetching it into the cache first when missing
// (a complete download only: written to a temporary file, its length checked, then renamed).
func (p *aptProxy) serveCached(w http.ResponseWriter, r *http.Request) {
	sum := sha256.Sum256([]byte(r.URL.Host + r.URL.Path))
	file := filepath.Join(p.dir, hex.EncodeToString(sum[:])+"-"+filepath.Base(r.URL.Path))
	if _, err := os.Stat(file); err != nil {
		if err := p.download(r.Context(), r.URL.String(), file); err != nil {
			var st statusError
			if errors.As(err, &st) {
				http.Error(w, err.Error(), int(st))
				return
			}
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	http.ServeFile(w, r, file)
}

type statusError int

func (s statusError) Error() string { return "mirror answered HTTP " + strconv.Itoa(int(s)) }

func (p *aptProxy) download(ctx context.Context, u, file string) error {
	resp, err := p.fetch(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return statusError(resp.StatusCode)
	}
	tmp, err := os.CreateTemp(p.dir, ".part-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // left only by a failed download
	n, err := io.Copy(tmp, resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("realos: %s: %d of %d bytes", u, n, resp.ContentLength)
	}
	return os.Rename(tmp.Name(), file)
}

// serve runs the proxy on l until l is closed.
func (p *aptProxy) serve(l net.Listener) {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(l) }()
}

// osAptProxy is the proxy to o's archive and its security archives.
func osAptProxy(cache string, o OS) (*aptProxy, error) {
	return newAptProxy(cache, append([]string{o.Mirror()}, o.securityMirrors()...)...)
}

// serveLoopback runs the proxy on a loopback port of the host until the listener is closed, and returns
// the listener and the environment that sends a command's apt through it (non-interactively).
func (p *aptProxy) serveLoopback() (net.Listener, []string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	p.serve(l)
	return l, []string{"http_proxy=http://" + l.Addr().String() + "/", "DEBIAN_FRONTEND=noninteractive"}, nil
}
