package emukit

import (
	"reflect"
	"testing"
	"time"
)

func TestOptionDefaults(t *testing.T) {
	def := 3 * time.Second
	if got := []time.Duration{Positive(0, def), Positive(-time.Second, def), Positive(time.Millisecond, def)}; !reflect.DeepEqual(got, []time.Duration{def, def, time.Millisecond}) {
		t.Errorf("Positive of zero, negative, positive = %v: zero and negative take the default, positive is kept", got)
	}
	if got := [][]string{Keys(nil, "k"), Keys([]string{}, "k"), Keys([]string{"a", "b"}, "k")}; !reflect.DeepEqual(got, [][]string{{"k"}, {"k"}, {"a", "b"}}) {
		t.Errorf("Keys of nil, empty, set = %v: nil and empty take the default key, set keys are kept", got)
	}
	seed := func() []int { return []int{1, 2} }
	if got := Seed(nil, seed); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("Seed(nil) = %v, want the default", got)
	}
	if got := Seed([]int{}, seed); got == nil || len(got) != 0 {
		t.Errorf("Seed(empty) = %#v, want the empty value kept (a deliberate empty catalog)", got)
	}
	if got := (SSH{}).WithDefaults("root"); got != (SSH{Host: "127.0.0.1", Port: 22, User: "root"}) {
		t.Errorf("SSH{}.WithDefaults(root) = %+v, want 127.0.0.1, 22, root", got)
	}
	if set := (SSH{Host: "10.0.0.1", Port: 2222, User: "ubuntu"}); set.WithDefaults("root") != set {
		t.Errorf("SSH.WithDefaults changed set values: %+v", set.WithDefaults("root"))
	}
}
