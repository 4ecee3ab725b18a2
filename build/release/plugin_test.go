package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// standIn writes a module whose cmd/kubectl-hairpin is a tiny main
// package, in place of the real plugin, and returns its folder.
func standIn(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/standin\n\ngo 1.26\n")
	write("cmd/kubectl-hairpin/main.go", "package main\n\nvar version = \"dev\"\n\nfunc main() { println(version) }\n")
	write("LICENSE", "the license\n")
	return root
}

// untar returns the files of a tar.gz by name.
func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b
	}
}

func TestBuildPluginArchivesEveryPlatformWithItsSum(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the stand-in")
	}
	root, out := standIn(t), t.TempDir()
	v := version("v0.0.0-test")
	platforms := []pluginPlatform{{"linux", "arm64"}, {"darwin", "amd64"}}
	archives, err := buildPlugin(t.Context(), root, "cmd/kubectl-hairpin", filepath.Join(root, "LICENSE"), out, t.TempDir(), v, platforms)
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != len(platforms) {
		t.Fatalf("%d archives; want %d", len(archives), len(platforms))
	}
	for i, a := range archives {
		if want := filepath.Join(out, "kubectl-hairpin_v0.0.0-test_"+platforms[i].OS+"_"+platforms[i].Arch+".tar.gz"); a.Path != want {
			t.Errorf("archive %s; want %s", a.Path, want)
		}
		if sum, err := fileSHA256(a.Path); err != nil || sum != a.SHA256 {
			t.Errorf("%s: sha256 %s (%v); recorded %s", a.Path, sum, err, a.SHA256)
		}
		files := untar(t, a.Path)
		if string(files["LICENSE"]) != "the license\n" {
			t.Errorf("%s: LICENSE %q", a.Path, files["LICENSE"])
		}
		bin := files["kubectl-hairpin"]
		if !bytes.Contains(bin, []byte("v0.0.0-test")) {
			t.Errorf("%s: the binary does not carry the version", a.Path)
		}
		switch a.OS {
		case "linux":
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil || f.Machine != elf.EM_AARCH64 {
				t.Errorf("%s: not an arm64 ELF (%v)", a.Path, err)
			}
		case "darwin":
			f, err := macho.NewFile(bytes.NewReader(bin))
			if err != nil || f.Cpu != macho.CpuAmd64 {
				t.Errorf("%s: not an amd64 Mach-O (%v)", a.Path, err)
			}
		}
	}

	krew, err := writeKrewManifest(out, downloadURL("https://example.com/releases/{version}/", v), v, archives)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(krew)
	if err != nil {
		t.Fatal(err)
	}
	var m krewPlugin
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Name != "hairpin" || m.Spec.Version != "v0.0.0-test" || len(m.Spec.Platforms) != len(archives) {
		t.Fatalf("krew manifest %+v", m)
	}
	for i, p := range m.Spec.Platforms {
		a := archives[i]
		if p.Selector.MatchLabels["os"] != a.OS || p.Selector.MatchLabels["arch"] != a.Arch || p.SHA256 != a.SHA256 || p.Bin != "kubectl-hairpin" ||
			p.URI != "https://example.com/releases/v0.0.0-test/"+filepath.Base(a.Path) {
			t.Errorf("platform %d: %+v; want %s/%s sha256 %s", i, p, a.OS, a.Arch, a.SHA256)
		}
	}
}

func TestBuildPluginRefusesAMissingPackage(t *testing.T) {
	archives, err := buildPlugin(t.Context(), t.TempDir(), "plugin/kubectl-hairpin/cmd/kubectl-hairpin", "LICENSE", t.TempDir(), t.TempDir(), "v1.0.0", pluginPlatforms)
	if err == nil || archives != nil || !strings.Contains(err.Error(), "plugin/kubectl-hairpin/cmd/kubectl-hairpin") {
		t.Fatalf("archives %v, error %v; want none and an error naming the package", archives, err)
	}
}

func TestWriteTarGzIsReproducible(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bin")
	if err := os.WriteFile(src, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, name := range []string{"a.tar.gz", "b.tar.gz"} {
		p := filepath.Join(dir, name)
		if err := writeTarGz(p, []archiveFile{{name: "kubectl-hairpin", path: src, mode: 0o755}}); err != nil {
			t.Fatal(err)
		}
		// A newer modification time must not change the archive.
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(src, later, later); err != nil {
			t.Fatal(err)
		}
		s, err := fileSHA256(p)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, s)
	}
	if sums[0] != sums[1] {
		t.Errorf("the same file archived twice gives %s and %s", sums[0], sums[1])
	}
}

func TestWriteSumsIsWhatSha256sumReads(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.yaml", "a.tgz"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := writeSums(dir, []string{filepath.Join(dir, "b.yaml"), filepath.Join(dir, "a.tgz")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  a.tgz") || !strings.HasSuffix(lines[1], "  b.yaml") || len(lines[0]) != 64+2+len("a.tgz") {
		t.Errorf("SHA256SUMS:\n%s", b)
	}
}
