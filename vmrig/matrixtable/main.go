// Command matrixtable gathers the cells of the prediction matrix on real
// kernels (scripts/vm-matrix.sh runs it) into one table, and exports them as
// JSON and CSV.
//
// Each boot of the matrix is one line of a manifest (tab-separated: kernel
// argument, kernel release when known, CPUs, preemption model, exit status,
// transcript, prediction, stderr log): scripts/vm-predict.sh booted the kernel with that CPU count
// and model, calibrated ndst inside the guest, measured batched and
// one-by-one deletes there, and 'ndst --json predict --from-guest' predicted
// them on the host. Every figure printed comes from those files: the
// measured and predicted times from the prediction; the model the guest ran
// (what 'ndst calibrate' detected inside it), its per-batch unregister cost
// and grace period from the transcript's calibration; the boot's wall time
// and the host's load from the rig's lines.
//
// A boot that failed is a row of its own with the reason (the rig's last
// message); it is never left out. The exit status is 0 when every boot gave
// its predictions, 1 when some did not, 2 on bad arguments or an unreadable
// manifest. Prediction errors beyond the target do not change the status:
// they are reported.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/ndst-project/ndst/safefile"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/vmrig"
)

func main() {
	manifest := flag.String("manifest", "", "the matrix's manifest (one boot a line, tab-separated)")
	jsonPath := flag.String("json", "", "write the cells as JSON to this file")
	csvPath := flag.String("csv", "", "write the cells as CSV to this file")
	wall := flag.Float64("wall", 0, "the whole matrix's wall time in seconds (printed and exported)")
	flag.Parse()
	if *manifest == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "matrixtable: usage: matrixtable -manifest FILE [-json FILE] [-csv FILE] [-wall SECONDS]")
		os.Exit(2)
	}
	f, err := os.Open(*manifest)
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrixtable: %v\n", err)
		os.Exit(2)
	}
	boots, err := readManifest(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrixtable: %s: %v\n", *manifest, err)
		os.Exit(2)
	}
	m := Build(boots, *wall)
	if err := m.WriteTable(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "matrixtable: %v\n", err)
		os.Exit(1)
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{{*jsonPath, m.WriteJSON}, {*csvPath, m.WriteCSV}} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, out.write); err != nil {
			fmt.Fprintf(os.Stderr, "matrixtable: %v\n", err)
			os.Exit(1)
		}
	}
	if len(m.Failures) > 0 {
		os.Exit(1)
	}
}

// writeFile writes an export with safefile.WriteOutput (a temporary file
// renamed into place, never through a link or onto a pseudo file system),
// so that a failed run never leaves half an export.
func writeFile(path string, write func(io.Writer) error) error {
	return safefile.WriteOutput(path, 0o644, write, nil)
}

// Boot is one line of the manifest: what the matrix asked for and the files
// the boot left.
type Boot struct {
	Kernel     string // the argument: a package name or a .deb path
	Release    string // the kernel's release, "" when it could not be had
	CPUs       int
	Preempt    string // the model asked for
	Exit       int    // vm-predict.sh's exit status
	Transcript string
	Prediction string
	Stderr     string
}

func readManifest(r io.Reader) ([]Boot, error) {
	var boots []Boot
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 8 {
			return nil, fmt.Errorf("line %d: %d fields, want 8 (kernel, release, CPUs, preempt, exit, transcript, prediction, stderr)", line, len(f))
		}
		cpus, err1 := strconv.Atoi(f[2])
		exit, err2 := strconv.Atoi(f[4])
		if err := errors.Join(err1, err2); err != nil || cpus < 1 {
			return nil, fmt.Errorf("line %d: bad CPU count %q or exit status %q", line, f[2], f[4])
		}
		boots = append(boots, Boot{Kernel: f[0], Release: f[1], CPUs: cpus, Preempt: f[3], Exit: exit, Transcript: f[5], Prediction: f[6], Stderr: f[7]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(boots) == 0 {
		return nil, errors.New("no boots")
	}
	return boots, nil
}

// Cell is one kernel, CPU count, model, N and delete mode.
type Cell struct {
	Kernel  string `json:"kernel"`  // the guest's release
	Package string `json:"package"` // what the matrix was given
	CPUs    int    `json:"cpus"`
	Preempt string `json:"preempt"` // the model booted
	// GuestPreempt is the model ndst calibrate detected inside the guest,
	// and GuestPreemptSource where it read it.
	GuestPreempt       string `json:"guest_preempt"`
	GuestPreemptSource string `json:"guest_preempt_source"`
	Count              int    `json:"count"`
	Mode               string `json:"mode"` // batched or one-by-one
	MeasuredNS         int64  `json:"measured_ns"`
	PredictedNS        int64  `json:"predicted_ns"`
	// Error is (predicted - measured) / measured.
	Error                float64 `json:"relative_error"`
	WithinTarget         bool    `json:"within_target"`
	MeasuredPerDeviceNS  float64 `json:"measured_per_device_ns"`
	PredictedPerDeviceNS float64 `json:"predicted_per_device_ns"`
	MeasuredRunsNS       []int64 `json:"measured_runs_ns"`
	PredictedRunsNS      []int64 `json:"predicted_runs_ns"`
	// The emulated kernel that predicted the cell.
	Profile         string `json:"profile"`
	ProfileWhy      string `json:"profile_why"`
	RCU             string `json:"rcu"`
	Strategy        string `json:"strategy"`
	HZ              int    `json:"hz"`
	EmulatedPreempt string `json:"emulated_preempt"`
	// From the guest's calibration: the fixed CPU cost of one unregister
	// batch in its cost table (a one-by-one delete is a batch of one and
	// pays it for every device) and the median grace period it measured
	// (0 when it could not: membarrier does not wait on one CPU).
	UnregisterBatchNS int64 `json:"calibrated_unregister_batch_ns"`
	GPP50NS           int64 `json:"calibrated_gp_p50_ns"`
	// The boot: qemu's wall time and the host's load average around it.
	Accel      string `json:"accel"`
	BootWallMS int64  `json:"boot_wall_ms"`
	Load1      string `json:"host_load1"`
	Load1End   string `json:"host_load1_end"`
	Transcript string `json:"transcript"`
}

// Failure is a boot that gave no predictions.
type Failure struct {
	Kernel  string `json:"kernel,omitempty"` // the release, when known
	Package string `json:"package"`
	CPUs    int    `json:"cpus"`
	Preempt string `json:"preempt"`
	Exit    int    `json:"exit"`
	Reason  string `json:"reason"`
	Stderr  string `json:"stderr_log"`
}

// Matrix is the whole run.
type Matrix struct {
	Target      float64   `json:"target"` // the relative error every cell should stay within
	WallSeconds float64   `json:"wall_seconds,omitempty"`
	Cells       []Cell    `json:"cells"`
	Within      int       `json:"cells_within_target"`
	Failures    []Failure `json:"failures,omitempty"`
	// order keeps boots and failures in manifest order for the table.
	order []row
}

// row is one line of the printed table: Cells[i], or Failures[i] when
// failed.
type row struct {
	failed bool
	i      int
}

// Build reads every boot's files; a boot whose files do not give its
// predictions becomes a Failure.
func Build(boots []Boot, wall float64) *Matrix {
	m := &Matrix{Target: bench.PredictThreshold, WallSeconds: wall}
	for _, b := range boots {
		cells, err := readBoot(b)
		if err != nil {
			m.Failures = append(m.Failures, Failure{Kernel: b.Release, Package: b.Kernel, CPUs: b.CPUs, Preempt: b.Preempt, Exit: b.Exit, Reason: err.Error(), Stderr: b.Stderr})
			m.order = append(m.order, row{failed: true, i: len(m.Failures) - 1})
			continue
		}
		for _, c := range cells {
			m.Cells = append(m.Cells, c)
			m.order = append(m.order, row{i: len(m.Cells) - 1})
			if c.WithinTarget {
				m.Within++
			}
		}
	}
	return m
}

// readBoot turns one boot's transcript and prediction into cells.
func readBoot(b Boot) ([]Cell, error) {
	if b.Exit != 0 {
		return nil, fmt.Errorf("exit %d: %s", b.Exit, rigMessage(b.Stderr))
	}
	tb, err := os.ReadFile(b.Transcript)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	boot, err := vmrig.Parse(bytes.NewReader(tb))
	if err != nil {
		return nil, fmt.Errorf("transcript %s: %w", b.Transcript, err)
	}
	if len(boot.Commands) == 0 || !strings.Contains(boot.Commands[0].Args, "calibrate") {
		return nil, fmt.Errorf("transcript %s: the guest's first command is not its calibration", b.Transcript)
	}
	var rep calibrate.Report
	if err := json.Unmarshal([]byte(boot.Commands[0].Stdout), &rep); err != nil {
		return nil, fmt.Errorf("transcript %s: the guest's calibration is not a JSON report: %w", b.Transcript, err)
	}
	pb, err := os.ReadFile(b.Prediction)
	if err != nil {
		return nil, fmt.Errorf("prediction: %w", err)
	}
	var p bench.Prediction
	if err := json.Unmarshal(pb, &p); err != nil {
		return nil, fmt.Errorf("prediction %s: not ndst's JSON report: %w", b.Prediction, err)
	}
	wallMS, _ := strconv.ParseInt(boot.Host["wall_ms"], 10, 64)
	if rep.Table == nil {
		return nil, fmt.Errorf("transcript %s: the guest's calibration has no cost table", b.Transcript)
	}
	var gp int64
	if rep.GP != nil {
		gp = rep.GP.P50NS
	}
	var cells []Cell
	for _, r := range p.Rows {
		if r.Op != "del" {
			continue // creates are a calibration input, not a prediction
		}
		cells = append(cells, Cell{
			Kernel: rep.Host.Kernel, Package: b.Kernel, CPUs: b.CPUs, Preempt: b.Preempt,
			GuestPreempt: rep.Host.Preempt, GuestPreemptSource: rep.Host.PreemptSource,
			Count: r.Count, Mode: r.Batch, MeasuredNS: r.MeasuredNS, PredictedNS: r.PredictedNS,
			Error: r.Error, WithinTarget: math.Abs(r.Error) <= bench.PredictThreshold,
			MeasuredPerDeviceNS: r.MeasuredPerDeviceNS, PredictedPerDeviceNS: r.PredictedPerDeviceNS,
			MeasuredRunsNS: r.MeasuredRuns, PredictedRunsNS: r.PredictedRuns,
			Profile: p.Profile, ProfileWhy: rep.ProfileWhy, RCU: p.RCU, Strategy: p.Strategy, HZ: p.HZ, EmulatedPreempt: p.Preempt,
			UnregisterBatchNS: rep.Table.Costs[costs.UnregisterBatch], GPP50NS: gp,
			Accel: boot.Host["accel"], BootWallMS: wallMS, Load1: boot.Host["load1"], Load1End: boot.Host["load1_end"],
			Transcript: b.Transcript,
		})
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("prediction %s has no delete rows", b.Prediction)
	}
	return cells, nil
}

// rigMessage is the last line the rig or ndst printed about a failure.
func rigMessage(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log (" + err.Error() + ")"
	}
	msg := ""
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "vm-run: ") || strings.HasPrefix(l, "ndst: ") || strings.HasPrefix(l, "vm-predict") || strings.HasPrefix(l, "vm-matrix: ") {
			msg = l
		}
	}
	if msg == "" {
		return "see " + path
	}
	return msg
}

// preemptLabel is the model booted, with what the guest detected when the
// two differ.
func (c *Cell) preemptLabel() string {
	if c.GuestPreempt == c.Preempt {
		return c.Preempt
	}
	g := c.GuestPreempt
	if g == "" {
		g = "unknown"
	}
	return fmt.Sprintf("%s (guest detected %s)", c.Preempt, g)
}

// WriteTable prints the Markdown table and the notes under it.
func (m *Matrix) WriteTable(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| kernel | CPUs | preempt | N | mode | measured | predicted | error | emulated as |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range m.order {
		if r.failed {
			f := m.Failures[r.i]
			fmt.Fprintf(&b, "| %s | %d | %s | - | - | boot failed: %s | - | - | - |\n", cmp.Or(f.Kernel, f.Package), f.CPUs, f.Preempt, mdEscape(f.Reason))
			continue
		}
		c := &m.Cells[r.i]
		meas, pred := ms(float64(c.MeasuredNS)), ms(float64(c.PredictedNS))
		if c.Mode == "one-by-one" {
			meas, pred = ms(c.MeasuredPerDeviceNS)+"/device", ms(c.PredictedPerDeviceNS)+"/device"
		}
		e := fmt.Sprintf("%+.1f%%", 100*c.Error)
		if !c.WithinTarget {
			e = "**" + e + "**" // beyond the target
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %s | %s | %s | %s | %s %s |\n", c.Kernel, c.CPUs, c.preemptLabel(), c.Count, c.Mode,
			meas, pred, e, c.Profile, c.EmulatedPreempt)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%d of %d cells within %.0f%% (errors beyond it in bold)", m.Within, len(m.Cells), 100*m.Target)
	if len(m.Failures) > 0 {
		fmt.Fprintf(&b, "; %d boot(s) failed", len(m.Failures))
	}
	if m.WallSeconds > 0 {
		fmt.Fprintf(&b, "; matrix wall time %s", minSec(m.WallSeconds))
	}
	b.WriteString(".\n")
	for _, n := range m.notes() {
		b.WriteString("- " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// notes says, from the cells themselves, what the table does not: the
// models the emulated kernel stood in with, the boots and the host's load.
func (m *Matrix) notes() []string {
	var notes []string
	seen := map[string]bool{}
	type bootKey struct {
		kernel, preempt string
		cpus            int
	}
	booted := map[bootKey]bool{}
	for _, c := range m.Cells {
		if c.GuestPreempt != "" && c.EmulatedPreempt != c.GuestPreempt {
			k := c.GuestPreempt + "->" + c.EmulatedPreempt
			if !seen[k] {
				seen[k] = true
				notes = append(notes, fmt.Sprintf("the emulated kernel has no %s model: the %s cells were predicted with --preempt %s", c.GuestPreempt, c.GuestPreempt, c.EmulatedPreempt))
			}
		}
		bk := bootKey{c.Kernel, c.Preempt, c.CPUs}
		if !booted[bk] {
			booted[bk] = true
			gp := "not measured"
			if c.GPP50NS > 0 {
				gp = ms(float64(c.GPP50NS))
			}
			notes = append(notes, fmt.Sprintf("%s, %d CPU(s), %s: guest preempt %s (from %s); line %s (%s); calibrated unregister_batch %s, grace period p50 %s; %s boot %s, host load %s -> %s",
				c.Kernel, c.CPUs, c.Preempt, orUnknown(c.GuestPreempt), orUnknown(c.GuestPreemptSource), c.Profile, c.ProfileWhy,
				ms(float64(c.UnregisterBatchNS)), gp, c.Accel, minSec(float64(c.BootWallMS)/1000), c.Load1, c.Load1End))
		}
	}
	notes = append(notes, "measured: the guest's netlink delete of N dummy devices just added (batched: one request; one-by-one: per device); "+
		"predicted: the emulated kernel with the guest's own calibration (median of its runs); the guest's deletes are never a calibration input")
	return notes
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// mdEscape keeps a message inside one table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// ms prints nanoseconds as milliseconds with 3 significant digits or more.
func ms(ns float64) string {
	d := ns / 1e6
	switch {
	case ns == 0:
		return "0 ms"
	case d >= 100:
		return fmt.Sprintf("%.0f ms", d)
	case d >= 10:
		return fmt.Sprintf("%.1f ms", d)
	}
	return fmt.Sprintf("%.2f ms", d)
}

// minSec prints seconds as "12 min 3 s" or "45.2 s".
func minSec(s float64) string {
	if s >= 60 {
		return fmt.Sprintf("%d min %d s", int(s)/60, int(math.Round(s))%60)
	}
	return fmt.Sprintf("%.1f s", s)
}

// WriteJSON writes the whole matrix as one JSON object.
func (m *Matrix) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(m)
}

// csvHeader names the CSV columns, one cell a row.
var csvHeader = []string{"kernel", "package", "cpus", "preempt", "guest_preempt", "count", "mode", "measured_ns", "predicted_ns",
	"relative_error", "within_target", "measured_per_device_ns", "predicted_per_device_ns", "profile", "rcu", "strategy", "hz",
	"emulated_preempt", "calibrated_unregister_batch_ns", "calibrated_gp_p50_ns", "boot_wall_ms", "host_load1", "host_load1_end"}

// WriteCSV writes one row per cell; failed boots have a row with the
// reason in place of the figures.
func (m *Matrix) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append(csvHeader, "failure")); err != nil {
		return err
	}
	for _, r := range m.order {
		var rec []string
		if r.failed {
			f := m.Failures[r.i]
			rec = make([]string, len(csvHeader)+1)
			rec[0], rec[1], rec[2], rec[3], rec[len(rec)-1] = f.Kernel, f.Package, strconv.Itoa(f.CPUs), f.Preempt, f.Reason
		} else {
			c := m.Cells[r.i]
			rec = []string{c.Kernel, c.Package, strconv.Itoa(c.CPUs), c.Preempt, c.GuestPreempt, strconv.Itoa(c.Count), c.Mode,
				strconv.FormatInt(c.MeasuredNS, 10), strconv.FormatInt(c.PredictedNS, 10), strconv.FormatFloat(c.Error, 'f', 4, 64),
				strconv.FormatBool(c.WithinTarget), strconv.FormatFloat(c.MeasuredPerDeviceNS, 'f', 0, 64),
				strconv.FormatFloat(c.PredictedPerDeviceNS, 'f', 0, 64), c.Profile, c.RCU, c.Strategy, strconv.Itoa(c.HZ),
				c.EmulatedPreempt, strconv.FormatInt(c.UnregisterBatchNS, 10), strconv.FormatInt(c.GPP50NS, 10),
				strconv.FormatInt(c.BootWallMS, 10), c.Load1, c.Load1End, ""}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
