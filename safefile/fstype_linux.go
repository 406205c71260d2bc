package safefile

import "golang.org/x/sys/unix"

// pseudoFSNames are the kernel's pseudo file systems by their statfs magic
// (linux/magic.h): file systems whose files are kernel objects or settings,
// never storage.
var pseudoFSNames = map[int64]string{
	unix.PROC_SUPER_MAGIC:      "procfs",
	unix.SYSFS_MAGIC:           "sysfs",
	unix.DEBUGFS_MAGIC:         "debugfs",
	unix.TRACEFS_MAGIC:         "tracefs",
	unix.CGROUP_SUPER_MAGIC:    "cgroupfs",
	unix.CGROUP2_SUPER_MAGIC:   "cgroup2",
	unix.SECURITYFS_MAGIC:      "securityfs",
	unix.BPF_FS_MAGIC:          "bpffs",
	unix.NSFS_MAGIC:            "nsfs",
	unix.DEVPTS_SUPER_MAGIC:    "devpts",
	0x62656570:                 "configfs", // CONFIGFS_MAGIC
	unix.PSTOREFS_MAGIC:        "pstore",
	unix.EFIVARFS_MAGIC:        "efivarfs",
	unix.SELINUX_MAGIC:         "selinuxfs",
	unix.SMACK_MAGIC:           "smackfs",
	unix.BINFMTFS_MAGIC:        "binfmt_misc",
	0x65735543:                 "fusectl", // FUSE_CTL_SUPER_MAGIC
	unix.RDTGROUP_SUPER_MAGIC:  "resctrl",
	unix.HUGETLBFS_MAGIC:       "hugetlbfs",
	unix.USBDEVICE_SUPER_MAGIC: "usbfs",
}

// pseudoFS names the kernel pseudo file system path is on, or "" when it is
// on another one (or cannot be told: statfs fails, and the open or create
// that follows reports why).
func pseudoFS(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return ""
	}
	return pseudoFSNames[int64(st.Type)]
}
