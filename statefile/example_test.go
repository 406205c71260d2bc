package statefile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ndst-project/ndst/statefile"
)

// A command's read-modify-write cycle: lock for the whole command, load,
// change, save, unlock.
func Example() {
	dir, _ := os.MkdirTemp("", "statefile-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ndst", "state")

	lock, err := statefile.Lock(path, 5*time.Second)
	if err != nil {
		fmt.Println(err) // names the holder's PID when another command holds it
		return
	}
	defer lock.Unlock()

	st, err := statefile.Load(path) // a missing file is an empty State
	if err != nil {
		fmt.Println(err) // corrupt or other version: path and the suggested fix
		return
	}
	st.NextIfindex++
	st.Devices = append(st.Devices, statefile.Device{Ifindex: st.NextIfindex, Name: "dummy0", Flags: 1})
	if err := statefile.Save(path, st); err != nil {
		fmt.Println(err)
		return
	}

	again, _ := statefile.Load(path)
	fmt.Printf("%d device(s), first %s at ifindex %d\n", len(again.Devices), again.Devices[0].Name, again.Devices[0].Ifindex)
	// Output: 1 device(s), first dummy0 at ifindex 1
}
