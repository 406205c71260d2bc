package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestReproduce2009Golden fixes the 2009 table per configuration: every
// figure is the mechanism's, with one fitted cost; a change in the model
// that moves one shows here.
func TestReproduce2009Golden(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 28 emulated teardowns of 1000 devices")
	}
	tb, err := Reproduce2009(context.Background(), nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tb.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n")
	if err := tb.WriteWhy(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "reproduce-2009.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the 2009 table differs from %s (go test ./bench -run Reproduce2009 -update to accept):\n--- got\n%s\n--- want\n%s", path, b.Bytes(), want)
	}
}
