package node

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// credentials is who a container process runs as.
type credentials struct {
	uid, gid uint32
	groups   []uint32
}

// containerUser resolves the container's user as kubelet and runc do:
// runAsUser/runAsGroup (container over Pod) over the image's USER, names
// looked up in the image's /etc/passwd and /etc/group; the groups add the
// Pod's supplementalGroups and fsGroup. runAsNonRoot refuses uid 0.
func containerUser(pod *corev1.Pod, c *corev1.Container, img *image) (credentials, error) {
	etc := filepath.Join(img.config.Dir, "etc")
	if img.host {
		etc = "/etc"
	}
	var cr credentials
	imgUser, imgGroup, _ := strings.Cut(img.config.User, ":")
	uid, gid, err := lookupUser(etc, imgUser)
	if err != nil {
		return cr, err
	}
	if imgGroup != "" {
		if gid, err = lookupGroup(etc, imgGroup); err != nil {
			return cr, err
		}
	}
	psc, sc := pod.Spec.SecurityContext, c.SecurityContext
	if u := runAsUser(psc, sc); u != nil {
		uid = uint32(*u)
		if imgGroup == "" {
			_, gid, _ = lookupUser(etc, strconv.Itoa(int(uid)))
		}
	}
	switch {
	case sc != nil && sc.RunAsGroup != nil:
		gid = uint32(*sc.RunAsGroup)
	case psc != nil && psc.RunAsGroup != nil:
		gid = uint32(*psc.RunAsGroup)
	}
	nonRoot := psc != nil && isTrue(psc.RunAsNonRoot)
	if sc != nil && sc.RunAsNonRoot != nil {
		nonRoot = *sc.RunAsNonRoot
	}
	if nonRoot && uid == 0 {
		return cr, &configError{"container has runAsNonRoot and image will run as root"}
	}
	cr = credentials{uid: uid, gid: gid, groups: []uint32{gid}}
	if psc != nil {
		for _, g := range psc.SupplementalGroups {
			cr.groups = appendGroup(cr.groups, uint32(g))
		}
		if psc.FSGroup != nil {
			cr.groups = appendGroup(cr.groups, uint32(*psc.FSGroup))
		}
	}
	return cr, nil
}

func appendGroup(gs []uint32, g uint32) []uint32 {
	if slices.Contains(gs, g) {
		return gs
	}
	return append(gs, g)
}

// lookupUser resolves a user name or number: a number need not be in
// passwd (its group is then 0).
func lookupUser(etc, user string) (uid, gid uint32, err error) {
	if user == "" {
		return 0, 0, nil
	}
	n, numErr := strconv.ParseUint(user, 10, 32)
	for _, f := range readDB(filepath.Join(etc, "passwd")) {
		if len(f) >= 4 && (f[0] == user || (numErr == nil && f[2] == user)) {
			u, _ := strconv.ParseUint(f[2], 10, 32)
			g, _ := strconv.ParseUint(f[3], 10, 32)
			return uint32(u), uint32(g), nil
		}
	}
	if numErr == nil {
		return uint32(n), 0, nil
	}
	return 0, 0, &configError{fmt.Sprintf("unable to find user %s: no matching entries in passwd file", user)}
}

func lookupGroup(etc, group string) (uint32, error) {
	if n, err := strconv.ParseUint(group, 10, 32); err == nil {
		return uint32(n), nil
	}
	for _, f := range readDB(filepath.Join(etc, "group")) {
		if len(f) >= 3 && f[0] == group {
			g, _ := strconv.ParseUint(f[2], 10, 32)
			return uint32(g), nil
		}
	}
	return 0, &configError{fmt.Sprintf("unable to find group %s: no matching entries in group file", group)}
}

// readDB reads a colon-separated database such as /etc/passwd.
func readDB(path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var rows [][]string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := s.Text(); line != "" && !strings.HasPrefix(line, "#") {
			rows = append(rows, strings.Split(line, ":"))
		}
	}
	return rows
}
