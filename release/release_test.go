package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// version is the release version of every published module: they are
// released in lockstep and require each other at it.
const version = "v0.1.0"

// modulePrefix is the path of the core module; the other modules of the
// repository are below it.
const modulePrefix = "github.com/elicitvault/elicitvault"

// published are the directories of the published modules, from the
// repository's root, in dependency order. Their tags are version for the
// root and DIR/version for the others.
var published = []string{".", "store/redis", "store/postgres", "otelelicit", "mcpgo", "cmd"}

// TestOutsideConsumer builds a file-system module proxy holding the
// published modules at version, made from the working tree (the files git
// would commit), and then, in a fresh module outside the workspace, gets
// the core module and both backends from it, builds a small server that
// uses them and runs it on the memory store (and on Redis and PostgreSQL
// when ELICITVAULT_REDIS_URL and ELICITVAULT_POSTGRES_URL are set), checks
// that mark3labs/mcp-go is nowhere in that consumer's graph, builds and
// runs an mcp-go consumer of the mcpgo module, and installs the CLI with
// go install …@version. The rest of the module graph
// comes from the machine's usual proxy.
func TestOutsideConsumer(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to list the repository's files")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	for _, dir := range published {
		checkGoMod(t, root, dir)
		buildModule(t, root, dir, proxy)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The usual proxy, from the environment outside this test. The module
	// cache's download directory goes before it: it is a proxy of what this
	// machine already downloaded, and saves fetching it again.
	usual := goEnv(t, "GOPROXY")
	if usual == "" || usual == "off" {
		usual = "https://proxy.golang.org,direct"
	}
	cacheProxy := "file://" + filepath.ToSlash(filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download"))
	env := append(os.Environ(),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+cacheProxy+","+usual,
		// Our modules are in no checksum database: nothing published them.
		// Every other module is checked as usual.
		"GONOSUMDB="+modulePrefix,
		"GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		// -trimpath keeps the temporary directories out of the build
		// cache's keys, so that the next run reuses what this one compiled.
		"GOFLAGS=-mod=mod -modcacherw -trimpath",
		// A module cache of its own: the release versions made here must
		// not shadow the real ones in the user's cache.
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOBIN="+filepath.Join(tmp, "bin"),
	)

	consumer := filepath.Join(tmp, "consumer")
	src, err := os.ReadFile("testdata/consumer.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(consumer, "go.mod"), "module example.com/consumer\n\ngo 1.25.0\n")
	writeFile(t, filepath.Join(consumer, "main.go"), string(src))

	run(t, consumer, env, "go", "get",
		modulePrefix+"@"+version,
		modulePrefix+"/store/redis@"+version,
		modulePrefix+"/store/postgres@"+version,
	)
	run(t, consumer, env, "go", "mod", "tidy")
	run(t, consumer, env, "go", "build", "-o", filepath.Join(tmp, "consumer-server"), ".")
	serverEnv := append(env, "MCP_ELICITATION_SECRET="+strings.Repeat("s", 43))
	stores := [][]string{{"memory"}}
	if u := os.Getenv("ELICITVAULT_REDIS_URL"); u != "" {
		stores = append(stores, []string{"redis", u})
	}
	if u := os.Getenv("ELICITVAULT_POSTGRES_URL"); u != "" {
		schema := fmt.Sprintf("evrelease_%d", time.Now().UnixNano())
		t.Cleanup(func() { dropSchema(t, u, schema) })
		stores = append(stores, []string{"postgres", u, schema})
	}
	for _, args := range stores {
		out := run(t, consumer, serverEnv, filepath.Join(tmp, "consumer-server"), args...)
		if !strings.Contains(out, "consumer: ready") {
			t.Errorf("the consumer's server on %s printed %q, want it ready", args[0], out)
		} else {
			t.Logf("the consumer's server ran on the %s store", args[0])
		}
	}

	// The consumer's requirements name only released versions of our
	// modules, and nothing test-only of ours.
	mf := parseGoMod(t, filepath.Join(consumer, "go.mod"))
	for _, r := range mf.Require {
		if strings.HasPrefix(r.Mod.Path, modulePrefix) && r.Mod.Version != version {
			t.Errorf("the consumer requires %s, want %s", r.Mod, version)
		}
	}
	graph := run(t, consumer, env, "go", "mod", "graph")
	// A go-sdk user never downloads mcp-go: it is the mcpgo module's.
	for _, bad := range []string{"testcontainers", "docker", "/store/internal/", "mark3labs"} {
		if strings.Contains(graph, bad) {
			t.Errorf("the consumer's module graph holds %q", bad)
		}
	}

	// An mcp-go user gets the mcpgo module at the release, and builds.
	mcpgoConsumer := filepath.Join(tmp, "consumer-mcpgo")
	writeFile(t, filepath.Join(mcpgoConsumer, "go.mod"), "module example.com/consumermcpgo\n\ngo 1.25.5\n")
	writeFile(t, filepath.Join(mcpgoConsumer, "main.go"), `package main

import (
	"fmt"

	"github.com/elicitvault/elicitvault/mcpgo/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	h := client.New(nil)
	fmt.Println("consumer-mcpgo:", len(h.Options(mcp.ClientCapabilities{})))
}
`)
	run(t, mcpgoConsumer, env, "go", "get", modulePrefix+"/mcpgo@"+version)
	run(t, mcpgoConsumer, env, "go", "mod", "tidy")
	if out := run(t, mcpgoConsumer, env, "go", "run", "."); !strings.Contains(out, "consumer-mcpgo: 1\n") {
		t.Errorf("the mcp-go consumer printed %q", out)
	}

	// go install of the CLI at the release, outside any module.
	run(t, tmp, env, "go", "install", modulePrefix+"/cmd/elicitvault@"+version)
	out := run(t, tmp, env, filepath.Join(tmp, "bin", "elicitvault"), "help")
	if !strings.Contains(out, "Usage: elicitvault") {
		t.Errorf("elicitvault help printed %q", out)
	}
}

// checkGoMod checks what an outsider's go command needs of a published
// go.mod: no replace directive (go install …@version refuses one, and a
// dependency's are ignored), siblings required at the release version
// (a version that was never tagged cannot be downloaded), and no module of
// the repository that is not published (such as a test helper's).
func checkGoMod(t *testing.T, root, dir string) {
	t.Helper()
	mf := parseGoMod(t, filepath.Join(root, dir, "go.mod"))
	for _, r := range mf.Replace {
		t.Errorf("%s/go.mod: replace %s: a published module has no replace directive (go.work serves development)", dir, r.Old.Path)
	}
	for _, r := range mf.Require {
		if !strings.HasPrefix(r.Mod.Path, modulePrefix) {
			continue
		}
		if !isPublished(r.Mod.Path) {
			t.Errorf("%s/go.mod requires %s, which is not published", dir, r.Mod.Path)
		} else if r.Mod.Version != version {
			t.Errorf("%s/go.mod requires %s, want %s (the modules are released in lockstep)", dir, r.Mod, version)
		}
	}
}

func isPublished(modPath string) bool {
	for _, dir := range published {
		if modPath == modulePath(dir) {
			return true
		}
	}
	return false
}

func modulePath(dir string) string {
	if dir == "." {
		return modulePrefix
	}
	return modulePrefix + "/" + dir
}

// buildModule writes the module in dir at version into the proxy
// directory: @v/list, .info, .mod and .zip, as the GOPROXY protocol lays
// them out.
func buildModule(t *testing.T, root, dir, proxy string) {
	t.Helper()
	m := module.Version{Path: modulePath(dir), Version: version}
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	writeFile(t, filepath.Join(vdir, "list"), version+"\n")
	writeFile(t, filepath.Join(vdir, version+".info"), string(info))
	writeFile(t, filepath.Join(vdir, version+".mod"), string(gomod))

	files := moduleFiles(t, root, dir)
	zf, err := os.Create(filepath.Join(vdir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	// Create leaves out the files of nested modules, vendor directories and
	// irregular files, as the go command does.
	if err := modzip.Create(zf, m, files); err != nil {
		t.Fatalf("zipping %s: %v", m, err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	// Every module carries the license: the go command copies the
	// repository's LICENSE into a module in a subdirectory that has none.
	var hasLicense bool
	for _, f := range files {
		hasLicense = hasLicense || f.Path() == "LICENSE"
	}
	if !hasLicense {
		t.Errorf("%s: no LICENSE in the module or at the root of the repository", m.Path)
	}
}

// moduleFiles lists the files of the module in dir that git would commit:
// tracked and untracked files that .gitignore does not exclude, that
// exist. A module in a subdirectory without a LICENSE gets the root's, as
// the go command gives it when it makes the zip from a tag.
func moduleFiles(t *testing.T, root, dir string) []modzip.File {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", dir)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	var files []modzip.File
	var hasLicense bool
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(name))
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		rel := strings.TrimPrefix(name, prefix)
		hasLicense = hasLicense || rel == "LICENSE"
		files = append(files, diskFile{rel: rel, abs: abs})
	}
	if !hasLicense && dir != "." {
		abs := filepath.Join(root, "LICENSE")
		if _, err := os.Stat(abs); err == nil {
			files = append(files, diskFile{rel: "LICENSE", abs: abs})
		}
	}
	return files
}

// diskFile is a file of the working tree, as golang.org/x/mod/zip wants it.
type diskFile struct{ rel, abs string }

func (f diskFile) Path() string                 { return path.Clean(f.rel) }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(f.abs) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

func parseGoMod(t *testing.T, file string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse(file, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// run runs a command in dir and returns its standard output; a failure
// ends the test with the command's output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// dropSchema drops a schema of the PostgreSQL server at rawURL, with psql
// when it is installed: this module keeps to x/mod, and the consumer is
// what uses the driver.
func dropSchema(t *testing.T, rawURL, schema string) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Logf("psql is not installed: schema %s is left behind", schema)
		return
	}
	cmd := exec.Command("psql", rawURL, "-qc", "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("dropping schema %s: %v\n%s", schema, err, out)
	}
}

func writeFile(t *testing.T, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
