package release

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestReleaseScript runs scripts/release on a throwaway copy of the
// repository (the files git would commit, in a fresh git repository), never
// on this one: its dry run changes nothing, then a release (without
// scripts/test, which is what runs this test) sets every sibling
// requirement, go.work's replace versions and this package's version,
// commits, and tags each published module; a second release of the same
// version is refused.
func TestReleaseScript(t *testing.T) {
	for _, tool := range []string{"git", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run scripts/release", tool)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	copyTree(t, root, repo)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") && !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_AUTHOR_NAME=release test", "GIT_AUTHOR_EMAIL=release@example.com",
		"GIT_COMMITTER_NAME=release test", "GIT_COMMITTER_EMAIL=release@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	git := func(args ...string) string { t.Helper(); return run(t, repo, env, "git", args...) }
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "copy")

	const v = "v0.9.9"
	tags := []string{v}
	for _, dir := range published[1:] {
		tags = append(tags, dir+"/"+v)
	}
	release := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(filepath.Join(repo, "scripts", "release"), args...)
		cmd.Dir = repo
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	unchanged := func(what string) {
		t.Helper()
		if s := git("status", "--porcelain"); s != "" {
			t.Errorf("%s changed the tree:\n%s", what, s)
		}
		if s := git("tag"); s != "" {
			t.Errorf("%s made tags: %s", what, s)
		}
	}

	// Without a CHANGELOG section, the dry run says it would stop.
	out, err := release("--dry-run", v)
	if err == nil || !strings.Contains(out, `CHANGELOG.md has no "## `+v+`" section`) {
		t.Errorf("dry run without a CHANGELOG section: %v\n%s", err, out)
	}
	unchanged("a dry run")

	changelog := filepath.Join(repo, "CHANGELOG.md")
	data, err := os.ReadFile(changelog)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("\n## "), []byte("\n## "+v+"\n\n- A release of TestReleaseScript.\n\n## "), 1)
	if err := os.WriteFile(changelog, data, 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "-qam", "changelog")

	out, err = release("--dry-run", v)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, tag := range tags {
		if !strings.Contains(out, "would run: git tag "+tag+"\n") {
			t.Errorf("the dry run does not say it would tag %s:\n%s", tag, out)
		}
	}
	for _, want := range []string{"go -C ./cmd mod edit -require=" + modulePrefix + "/otelelicit@" + v, "would set in go.work", "would run: scripts/tidy", "would run: scripts/test"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dry run does not say %q:\n%s", want, out)
		}
	}
	unchanged("a dry run")

	if out, err = release("--no-test", v); err != nil {
		t.Fatalf("release: %v\n%s", err, out)
	}
	if s := git("status", "--porcelain"); s != "" {
		t.Errorf("the release left changes uncommitted:\n%s", s)
	}
	if msg := strings.TrimSpace(git("log", "-1", "--format=%s")); msg != "release: "+v {
		t.Errorf("last commit %q, want the release's", msg)
	}
	head := git("rev-parse", "HEAD")
	gotTags := strings.Fields(git("tag", "--points-at", "HEAD"))
	if want := slices.Sorted(slices.Values(tags)); !slices.Equal(slices.Sorted(slices.Values(gotTags)), want) {
		t.Errorf("tags at HEAD %v, want %v", gotTags, want)
	}
	for _, tag := range tags {
		if got := git("rev-parse", tag+"^{commit}"); got != head {
			t.Errorf("%s is at %s, want HEAD %s", tag, got, head)
		}
	}

	// Every module requires its siblings at v; go.work replaces them at v.
	wf, err := modfile.ParseWork("go.work", readFile(t, filepath.Join(repo, "go.work")), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range wf.Replace {
		if strings.HasPrefix(r.Old.Path, modulePrefix) && r.Old.Version != v {
			t.Errorf("go.work replaces %s at %s, want %s", r.Old.Path, r.Old.Version, v)
		}
	}
	siblings := 0
	for _, u := range wf.Use {
		mf := parseGoMod(t, filepath.Join(repo, u.Path, "go.mod"))
		for _, r := range mf.Require {
			if strings.HasPrefix(r.Mod.Path, modulePrefix) {
				siblings++
				if r.Mod.Version != v {
					t.Errorf("%s/go.mod requires %s", u.Path, r.Mod)
				}
			}
		}
	}
	if siblings == 0 {
		t.Error("no module requires a sibling")
	}
	if !regexp.MustCompile(`(?m)^const version = "` + regexp.QuoteMeta(v) + `"$`).Match(readFile(t, filepath.Join(repo, "release", "release_test.go"))) {
		t.Errorf("release/release_test.go: version is not %s", v)
	}
	if out, err := release("--no-test", v); err == nil || !strings.Contains(out, "tag "+v+" exists already") {
		t.Errorf("releasing %s again: %v\n%s", v, err, out)
	}
	// The workspace still resolves: go.work's replace lines name the
	// versions the modules require.
	run(t, repo, env, "go", "list", "-m", "all")
}

// copyTree copies the files of the repository at root that git would
// commit (tracked, and untracked but not ignored) to dir, with their modes.
func copyTree(t *testing.T, root, dir string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, filepath.FromSlash(name))
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), string(readFile(t, src)))
		if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(name)), fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
