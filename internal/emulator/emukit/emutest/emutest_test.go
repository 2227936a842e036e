package emutest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

func TestDoAndFetch(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Type", r.Header.Get("Content-Type"))
		w.Header().Set("X-Auth", r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusCreated)
		if len(b) == 0 {
			b = []byte("not json")
		}
		w.Write(b) //nolint:errcheck
	})
	a := Do(t, echo, http.MethodPost, "/x", map[string]int{"n": 1}, "Authorization", "Bearer k")
	if a.Status != 201 || a.Body["n"] != float64(1) || a.Header.Get("X-Auth") != "Bearer k" || a.Header.Get("X-Type") != "application/json" {
		t.Fatalf("JSON body: %+v", a)
	}
	if a = Do(t, echo, http.MethodGet, "/x", ""); a.JSONErr == nil || a.Header.Get("X-Type") != "" {
		t.Fatalf("no body: %+v", a)
	}
	srv := httptest.NewServer(echo)
	defer srv.Close()
	a = Fetch(t, srv.URL, http.MethodPost, "/x", url.Values{"grant_type": {"client_credentials"}})
	if string(a.Raw) != "grant_type=client_credentials" || a.Header.Get("X-Type") != "application/x-www-form-urlencoded" {
		t.Fatalf("form body: %+v", a)
	}
	var v struct{ N int }
	Fetch(t, srv.URL, http.MethodPost, "/x", `{"N":3}`).Decode(t, &v)
	if v.N != 3 {
		t.Fatalf("decoded %+v", v)
	}
}

func TestJSON(t *testing.T) {
	if got := string(JSON(t, map[string]any{"a": 1, "b": []string{"x"}})); got != `{"a":1,"b":["x"]}` {
		t.Fatalf("JSON = %s, want the value encoded as JSON", got)
	}
}
