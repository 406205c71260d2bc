package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPredictFromRecordedGuests predicts the deletes of recorded VM guests
// (scripts/vm-predict.sh transcripts: Debian 6.1 stock kernel, 1 and 2 CPUs,
// preempt none and full) from their own calibrations, fitted again with this
// model, and fixes the result: a model change that moves a prediction shows
// as a diff here (go test ./bench -run RecordedGuests -update to accept).
func TestPredictFromRecordedGuests(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join("testdata", "guests", "*.log"))
	if len(logs) == 0 {
		t.Fatal("no recorded guests in testdata/guests")
	}
	for _, path := range logs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			table, rec, err := ParseGuestLog(f)
			if err != nil {
				t.Fatal(err)
			}
			s := &PredictSpec{Runs: 1, SimRuns: 5, Seed: 1, Costs: table, Recorded: rec}
			for n := range rec.Del {
				s.Counts = append(s.Counts, n)
			}
			slices.Sort(s.Counts)
			p, err := Predict(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := p.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(path, ".log") + ".predict"
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("prediction differs from %s (-update to accept):\n--- got\n%s\n--- want\n%s", golden, b.Bytes(), want)
			}
		})
	}
}
