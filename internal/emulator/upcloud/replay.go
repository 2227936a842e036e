package upcloud

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// recordedUUID matches an UpCloud uuid in a recorded request's path.
var recordedUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// PathUUID is the first uuid in a recorded request's path ("/1.3/server/<uuid>/stop"), "" when it has
// none: the key a replaying test maps onto the emulator's own uuid for ReplayURL.
func PathUUID(path string) string { return recordedUUID.FindString(path) }

// ReplayURL is where to send a recorded UpCloud request (its path and raw query) to this emulator served
// at root (its base URL without APIPrefix), for tests that replay real recordings: every uuid in the
// path that ids maps (recorded uuid -> the emulator's) is replaced, others are kept, and /1.2/ becomes
// /1.3/ (the same body shapes, see the recordings' README).
func ReplayURL(root, path, rawQuery string, ids map[string]string) string {
	path = recordedUUID.ReplaceAllStringFunc(path, func(u string) string {
		if v, ok := ids[u]; ok {
			return v
		}
		return u
	})
	u := root + strings.Replace(path, "/1.2/", "/1.3/", 1)
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// WithSDKTestLabels is a recorded create request body ({"server":{...}}) with the labels UpCloud's SDK
// integration tests give the servers they create (managedBy and testName): a test replaying recordings
// creates with it the servers that stand in for the recordings' other servers, which were created so.
func WithSDKTestLabels(body []byte, testName string) ([]byte, error) {
	var m map[string]map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m["server"] == nil {
		return nil, fmt.Errorf("not a create request body {\"server\":{...}}: %q", body)
	}
	m["server"]["labels"] = map[string]any{"label": []any{
		map[string]any{"key": "managedBy", "value": "upcloud-sdk-integration-test"},
		map[string]any{"key": "testName", "value": testName}}}
	return json.Marshal(m)
}
