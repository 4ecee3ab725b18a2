package imagebuild

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// GoZoneinfo returns the timezone database of the Go toolchain on PATH,
// $(go env GOROOT)/lib/time/zoneinfo.zip: the data time/tzdata embeds,
// the same for every build with the same Go release.
func GoZoneinfo() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip"), nil
}

// tzifMagic starts every TZif file (RFC 8536, section 3.1).
const tzifMagic = "TZif"

// ZoneinfoFiles returns the zones of the zip at zipPath as files under
// ZoneinfoDir (mode 0644, root-owned), with their folders, in name order.
// Every entry must be a TZif file whose name stays inside ZoneinfoDir.
func ZoneinfoFiles(zipPath string) ([]File, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, fmt.Errorf("timezone database: %w", err)
	}
	defer zr.Close()
	files := []File{dir(ZoneinfoDir, 0o755)}
	dirs := map[string]bool{ZoneinfoDir: true}
	for _, zf := range zr.File {
		if zf.FileInfo().IsDir() {
			continue
		}
		if !filepath.IsLocal(zf.Name) || strings.Contains(zf.Name, `\`) {
			return nil, fmt.Errorf("timezone database %s: entry %q: not a local name", zipPath, zf.Name)
		}
		body, err := readZipFile(zf)
		if err != nil {
			return nil, fmt.Errorf("timezone database %s: %s: %w", zipPath, zf.Name, err)
		}
		if !bytes.HasPrefix(body, []byte(tzifMagic)) {
			return nil, fmt.Errorf("timezone database %s: %s: not a TZif file", zipPath, zf.Name)
		}
		p := path.Join(ZoneinfoDir, zf.Name)
		for d := path.Dir(p); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			files = append(files, dir(d, 0o755))
		}
		files = append(files, File{Path: p, Mode: 0o644, Body: body})
	}
	if len(files) == 1 {
		return nil, fmt.Errorf("timezone database %s: no zones", zipPath)
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

func readZipFile(zf *zip.File) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
