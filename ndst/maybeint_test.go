package ndst

import (
	"encoding/json"
	"testing"
)

func TestMaybeIntJSON(t *testing.T) {
	for _, tt := range []struct {
		d    Device
		json string
		text string
	}{
		{Device{Name: "a", Refcount: Known(3)}, `{"name":"a","ifindex":0,"state":"","refcount":3}`, "3"},
		{Device{Name: "a", Refcount: Known(0)}, `{"name":"a","ifindex":0,"state":"","refcount":0}`, "0"},
		{Device{Name: "a"}, `{"name":"a","ifindex":0,"state":"","refcount":null}`, "-"},
	} {
		b, err := json.Marshal(tt.d)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", tt.d, b, err, tt.json)
		}
		if got := tt.d.Refcount.String(); got != tt.text {
			t.Errorf("Refcount %+v String() = %q, want %q", tt.d.Refcount, got, tt.text)
		}
		var back Device
		if err := json.Unmarshal(b, &back); err != nil || back != tt.d {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tt.d)
		}
	}
	var d Device
	if err := json.Unmarshal([]byte(`{"refcount":"x"}`), &d); err == nil {
		t.Errorf("Unmarshal of refcount \"x\" = nil error, want one")
	}
}
