package framework

import (
	"os"
	"strings"
)

// VolumeDirsOf lists the volume directories left under d.Dir for claims
// of the given management namespaces: local-path names each
// pvc-<uid>_<namespace>_<claim>.
func (d *StorageDeployment) VolumeDirsOf(namespaces ...string) []string {
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		return []string{"reading " + d.Dir + ": " + err.Error()}
	}
	var left []string
	for _, e := range entries {
		for _, ns := range namespaces {
			if strings.Contains(e.Name(), "_"+ns+"_") {
				left = append(left, e.Name())
			}
		}
	}
	return left
}
