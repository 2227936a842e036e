// Package emutest holds helpers the emulators' tests share: one request to an emulator, in process or
// over HTTP, and its answer. Only tests import it.
package emutest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Answer is an emulator's answer to one request.
type Answer struct {
	Status int
	Header http.Header
	// Raw is the body as answered.
	Raw []byte
	// Body is Raw decoded as a JSON object (nil when it is none); JSONErr is the decoding's error.
	Body    map[string]any
	JSONErr error
}

// Do sends one request to h in process. body is sent as JSON: a string as it is ("" and nil as no
// body), url.Values as a form, anything else encoded. header holds name, value pairs ("Authorization", "Bearer k").
func Do(t testing.TB, h http.Handler, method, path string, body any, header ...string) Answer {
	t.Helper()
	rd, ctype := encode(body)
	req := httptest.NewRequest(method, path, rd)
	setHeaders(req, ctype, header)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer(rec.Code, rec.Header(), rec.Body.Bytes())
}

// Fetch is Do over HTTP, to an emulator served at base.
func Fetch(t testing.TB, base, method, path string, body any, header ...string) Answer {
	t.Helper()
	rd, ctype := encode(body)
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	setHeaders(req, ctype, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer(resp.StatusCode, resp.Header, data)
}

// JSON encodes v as JSON (a request body to send), failing the test when it does not encode.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Decode decodes Raw into v, failing the test when it does not decode.
func (a Answer) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.Raw, v); err != nil {
		t.Fatalf("body %q: %v", a.Raw, err)
	}
}

func encode(body any) (io.Reader, string) {
	switch b := body.(type) {
	case nil:
		return nil, ""
	case url.Values:
		return strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	case string:
		if b == "" {
			return nil, ""
		}
		return strings.NewReader(b), "application/json"
	case []byte:
		return bytes.NewReader(b), "application/json"
	default:
		data, _ := json.Marshal(b)
		return bytes.NewReader(data), "application/json"
	}
}

func setHeaders(req *http.Request, ctype string, header []string) {
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
}

func answer(status int, header http.Header, raw []byte) Answer {
	a := Answer{Status: status, Header: header, Raw: raw}
	a.JSONErr = json.Unmarshal(raw, &a.Body)
	return a
}
