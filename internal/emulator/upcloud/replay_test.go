package upcloud

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestReplayURL(t *testing.T) {
	const rec, other = "00aa1a2b-0000-4000-8000-000000000001", "00bb1a2b-0000-4000-8000-000000000002"
	ids := map[string]string{rec: "emu-uuid"}
	for _, tc := range [][4]string{
		{"/1.2/server/" + rec, "", "http://e/1.3/server/emu-uuid", "a mapped uuid is replaced, 1.2 becomes 1.3"},
		{"/1.3/server/" + other + "/stop", "", "http://e/1.3/server/" + other + "/stop", "an unmapped uuid is kept"},
		{"/1.3/server", "label=a%3Db", "http://e/1.3/server?label=a%3Db", "the raw query is appended"},
	} {
		if got := ReplayURL("http://e", tc[0], tc[1], ids); got != tc[2] {
			t.Errorf("%s: ReplayURL(%q, %q) = %q, want %q", tc[3], tc[0], tc[1], got, tc[2])
		}
	}
}

// WithSDKTestLabels keeps the body's other fields, sets the SDK tests' two labels, and refuses a body
// that is not a create request.
func TestWithSDKTestLabels(t *testing.T) {
	got, err := WithSDKTestLabels([]byte(`{"server":{"zone":"fi-hel2","labels":{"label":[]}}}`), "TestX")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"server":{"labels":{"label":[{"key":"managedBy","value":"upcloud-sdk-integration-test"},{"key":"testName","value":"TestX"}]},"zone":"fi-hel2"}}`
	var g, w any
	_ = json.Unmarshal(got, &g)
	_ = json.Unmarshal([]byte(want), &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, bad := range []string{`[]`, `{"storage":{}}`, `not json`} {
		if _, err := WithSDKTestLabels([]byte(bad), "TestX"); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
