package clouds

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/hydragpu/terraform-provider-hydra/internal/backends/restclient"
)

// key is present only when the block sets it.
type Values map[string]any

// Settings are one block's resolved settings: the block's value, else the environment variable's,
// else the default, and the emulator's overrides over all of them.
type Settings struct {
	driver *Driver
	values Values
	// UserAgent is the User-Agent of the cloud's API requests (Env.UserAgent; "" for restclient's
	// default). Build passes it to the backend's client through restclient.Tuning (tuning).
	UserAgent string
	// base is the client tuning the caller handed in (Env.Tuning).
	base restclient.Tuning
	// provisioning is Env.Provisioning.
	provisioning bool
}

// String returns a KindString setting ("" when unset).
func (s Settings) String(key string) string {
	v, _ := s.values[key].(string)
	return v
}

// Float returns a KindFloat setting (0 when unset).
func (s Settings) Float(key string) float64 {
	v, _ := s.values[key].(float64)
	return v
}

// Bool returns a KindBool setting (false when unset).
func (s Settings) Bool(key string) bool {
	v, _ := s.values[key].(bool)
	return v
}

// Has reports whether the setting has a value (an empty string is none).
func (s Settings) Has(key string) bool {
	v, ok := s.values[key]
	if !ok {
		return false
	}
	str, isString := v.(string)
	return !isString || str != ""
}

// Require returns a *MissingError unless every key has a value.
func (s Settings) Require(keys ...string) error {
	return s.RequireOneOf(keys)
}

// RequireOneOf returns a *MissingError unless every key of at least one of the alternatives has a value.
func (s Settings) RequireOneOf(alternatives ...[]string) error {
	for _, keys := range alternatives {
		ok := true
		for _, k := range keys {
			ok = ok && s.Has(k)
		}
		if ok {
			return nil
		}
	}
	e := &MissingError{Cloud: s.driver.Title, Block: s.driver.Block}
	for _, keys := range alternatives {
		var alt []Setting
		for _, k := range keys {
			st, _ := s.driver.Setting(k)
			st.Key = k
			alt = append(alt, st)
		}
		e.Need = append(e.Need, alt)
	}
	return e
}

// MissingError says which settings (and environment variables) a cloud needs but was not given.
type MissingError struct {
	Cloud string // the cloud's Title
	Block string // its provider block's name
	// Need are the alternatives: each is a set of settings that together would do.
	Need [][]Setting
}

func (e *MissingError) Error() string {
	var keys, envs []string
	n := 0
	for _, alt := range e.Need {
		var k, v []string
		for _, s := range alt {
			k = append(k, s.Key)
			if s.Env != "" {
				v = append(v, s.Env)
			}
		}
		n += len(k)
		keys = append(keys, joinAnd(k))
		if len(v) > 0 {
			envs = append(envs, joinAnd(v))
		}
	}
	them := "them"
	if n == 1 {
		them = "it"
	}
	msg := fmt.Sprintf("%s needs %s. Set %s in the %s block", e.Cloud, strings.Join(keys, ", or "), them, e.Block)
	if len(envs) > 0 {
		msg += ", or in the environment as " + strings.Join(envs, ", or ")
	}
	return msg + fmt.Sprintf(". Or set %s to use hydra's local emulator of %s instead.", EmulatorDirKey, e.Cloud)
}

// EmulatorError is a failure to start a cloud's emulator.
type EmulatorError struct {
	Cloud string
	Dir   string
	Err   error
}

func (e *EmulatorError) Error() string {
	return fmt.Sprintf("starting the %s emulator with its state in %s: %v", e.Cloud, e.Dir, e.Err)
}

func (e *EmulatorError) Unwrap() error { return e.Err }

// Enabled reports whether a present block turns its cloud on: always, unless the driver is
// OffByDefault and the block does not set enabled = true.
func (d *Driver) Enabled(block Values) bool {
	if !d.OffByDefault {
		return true
	}
	on, _ := block[EnabledKey].(bool)
	return on
}

// Resolve takes a block's values and fills in, for every setting it does not set, the environment
// variable's value, else the default. A block value that is an empty string counts as unset.
func (d *Driver) Resolve(block Values) (Settings, error) {
	out := Values{}
	for _, st := range d.AllSettings() {
		v, ok := block[st.Key]
		if s, isString := v.(string); ok && isString && s == "" {
			ok = false
		}
		if ok {
			if err := st.check(v, "the "+d.Block+" block's "+st.Key); err != nil {
				return Settings{}, err
			}
			out[st.Key] = v
			continue
		}
		if env := os.Getenv(st.Env); st.Env != "" && env != "" {
			v, err := st.parse(env)
			if err != nil {
				return Settings{}, err
			}
			out[st.Key] = v
			continue
		}
		if st.Default != nil {
			out[st.Key] = st.Default
		}
	}
	for k := range block {
		if _, ok := d.Setting(k); !ok {
			return Settings{}, fmt.Errorf("the %s block has no setting %q", d.Block, k)
		}
	}
	return Settings{driver: d, values: out}, nil
}

// parse reads an environment variable's value.
func (st Setting) parse(env string) (any, error) {
	var v any = env
	switch st.Kind {
	case KindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(env), 64)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a number", st.Env, env)
		}
		v = f
	case KindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(env))
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not true or false", st.Env, env)
		}
		v = b
	}
	return v, st.check(v, st.Env)
}

// check verifies a value's type and range.
func (st Setting) check(v any, what string) error {
	var ok bool
	switch st.Kind {
	case KindString:
		_, ok = v.(string)
	case KindFloat:
		var f float64
		f, ok = v.(float64)
		if ok && st.Range != nil && (f < st.Range.Min || f > st.Range.Max) {
			if math.IsInf(st.Range.Max, 1) {
				return fmt.Errorf("%s is %v; it must be at least %v", what, f, st.Range.Min)
			}
			return fmt.Errorf("%s is %v; it must be between %v and %v", what, f, st.Range.Min, st.Range.Max)
		}
	case KindBool:
		_, ok = v.(bool)
	}
	if !ok {
		return fmt.Errorf("%s must be a %s, got %T", what, st.Kind, v)
	}
	return nil
}
