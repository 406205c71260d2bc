package calibrate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ndst-project/ndst/safefile"
)

// netnsFilesDir is where the real backend makes a named namespace's mount
// point. Its ownership record, under /run/ndst, reuses the file of a
// deleted one (ndst/nlbackend/recordspare_linux.go) and so makes no inode
// once the first namespaces are deleted.
const netnsFilesDir = "/run/netns"

// netnsFilesNote describes the filesystem that holds the namespaces' files
// when creating them costs more than the kernel's namespace work: ext4
// without a journal. There every new inode skips the free inodes of its
// block group deleted in the last minute (six while their inode table
// block is dirty; fs/ext4/ialloc.c, find_inode_bit and recently_deleted,
// checked only when s_journal is NULL), looking each one up in the buffer
// cache,
// and the calibration's own rounds delete hundreds: the time to create a
// namespace then depends on what was deleted before it, not on the kernel
// line the emulated kernel models. "" when the files are elsewhere or
// the journal cannot be read.
func netnsFilesNote() string {
	// Before the first namespace, the directory may not be there yet: its
	// files will be made on the filesystem of the nearest one that is.
	dir := netnsFilesDir
	var st unix.Stat_t
	for unix.Stat(dir, &st) != nil {
		if dir == "/" {
			return ""
		}
		dir = filepath.Dir(dir)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type != unix.EXT4_SUPER_MAGIC {
		return ""
	}
	link, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return ""
	}
	dev := filepath.Base(link)
	b, err := safefile.ReadKernelFile(filepath.Join("/sys/fs/ext4", dev, "journal_task"))
	if err != nil || strings.TrimSpace(string(b)) != "<none>" {
		return ""
	}
	return fmt.Sprintf("%s is on ext4 without a journal (%s), where every mount point a create makes under it first skips the free inodes deleted in the last minute, which the calibration's own rounds delete by the hundred (ndst's ownership records reuse their files and cost no inode): the time to create a namespace follows what was deleted before it, which the emulated kernel does not model", netnsFilesDir, dev)
}
