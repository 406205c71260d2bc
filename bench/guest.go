package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
)

// Recorded holds real-kernel measurements taken elsewhere (inside a guest
// booted by scripts/vm-run.sh), to compare with the emulated kernel instead
// of measuring the local kernel.
type Recorded struct {
	// Source says where they come from (the guest's kernel release).
	Source string
	// Cmdline is the command line the guest booted with, when the
	// transcript has it.
	Cmdline string
	Kind    string
	// Del[n][batch] and Add[n] are the wall times of each run.
	Del map[int]map[string][]int64
	Add map[int][]int64
}

// guestMark starts every line the VM rig adds to the guest's output.
const guestMark = "@@ndst-vm "

// ParseGuestLog reads a scripts/vm-run.sh transcript whose commands ran
// "--json calibrate" and pairs of "--json add N" / "--json del ..." (with
// and without --one-by-one) in the guest, and returns the guest's cost table
// and its measurements. Commands that failed are reported, not skipped.
func ParseGuestLog(r io.Reader) (*costs.Table, *Recorded, error) {
	rec := &Recorded{Del: map[int]map[string][]int64{}, Add: map[int][]int64{}}
	var table *costs.Table
	var cmd string
	var out strings.Builder
	in := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, guestMark) {
			if in {
				out.WriteString(line)
				out.WriteByte('\n')
			}
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, guestMark))
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "guest":
			rec.Source = strings.Join(f[1:], " ")
		case "cmdline":
			rec.Cmdline = strings.Join(f[1:], " ")
		case "begin":
			in, cmd = true, strings.Join(f[min(2, len(f)):], " ") // "begin N ARGS..."; a cut line has fewer
			out.Reset()
		case "stderr":
			if !in {
				continue
			}
			in = false
			t, err := parseGuestOutput(cmd, out.String(), rec)
			if err != nil {
				return nil, nil, err
			}
			if t != nil {
				table = t
			}
		case "end":
			// calibrate exits 1 when its closure fails, with its report
			// and table written: the guest's table is refitted here anyway.
			calibrated := strings.Contains(cmd, "calibrate") && table != nil && len(f) >= 3 && f[2] == "exit=1"
			if len(f) >= 3 && f[2] != "exit=0" && !calibrated {
				return nil, nil, fmt.Errorf("guest command %q failed (%s); see the transcript", cmd, f[2])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if table == nil {
		return nil, nil, fmt.Errorf("the transcript has no guest calibration (run '--json calibrate' in the guest first)")
	}
	if len(rec.Del) == 0 {
		return nil, nil, fmt.Errorf("the transcript has no guest deletes")
	}
	return table, rec, nil
}

func parseGuestOutput(cmd, out string, rec *Recorded) (*costs.Table, error) {
	out = strings.TrimSpace(out)
	if strings.Contains(cmd, "calibrate") {
		var rep calibrate.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Table == nil {
			return nil, fmt.Errorf("guest calibration output is not a JSON report: %.200q", out)
		}
		// The guest's measurements (when the report has them) are fitted
		// again with this model, so that a transcript recorded earlier is
		// predicted by the table this ndst's calibrate would write from the
		// same measurements.
		if len(rep.Batches) >= 2 {
			if err := rep.Refit(context.Background()); err != nil {
				return nil, fmt.Errorf("guest calibration: %w", err)
			}
		}
		return rep.Table, rep.Table.Validate()
	}
	var res ndst.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return nil, fmt.Errorf("guest command %q: output is not a JSON result: %.200q", cmd, out)
	}
	switch res.Op {
	case "add":
		rec.Add[res.Count] = append(rec.Add[res.Count], res.WallNS)
		rec.Kind = res.Kind
	case "del":
		b := "batched"
		if !res.Batched {
			b = "one-by-one"
		}
		if rec.Del[res.Count] == nil {
			rec.Del[res.Count] = map[string][]int64{}
		}
		rec.Del[res.Count][b] = append(rec.Del[res.Count][b], res.WallNS)
	}
	return nil, nil
}
