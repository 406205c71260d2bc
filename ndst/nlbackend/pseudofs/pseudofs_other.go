//go:build !linux

package pseudofs

// Read fails: the pseudo file systems are Linux's.
func Read(fs *FS, rels ...string) (Files, string, error) {
	return nil, "", &Unavailable{fs.Type, "it is Linux's"}
}

// HostMount returns "": only Linux has them.
func HostMount(fs *FS) string { return "" }
