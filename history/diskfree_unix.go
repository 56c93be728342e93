//go:build unix

package history

import "syscall"

// diskFree is how many bytes the file system holding dir has free for this user; -1 when
// it cannot tell.
func diskFree(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
