package upcloud

import (
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
