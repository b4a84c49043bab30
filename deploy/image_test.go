package deploy

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stage is one FROM of a Dockerfile, with the instructions the tests read.
type stage struct {
	name, from string
	user       string   // the last USER
	entrypoint []string // the last ENTRYPOINT, exec form
	copies     []string // COPY instructions' arguments
	runs       []string // RUN instructions' arguments
}

// parseDockerfile reads the stages of a Dockerfile: continuation lines
// joined, comments dropped. Enough for the tests' questions; not BuildKit.
func parseDockerfile(t *testing.T, file string) []*stage {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var stages []*stage
	var line strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") || text == "" {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line.WriteString(cont + " ")
			continue
		}
		line.WriteString(text)
		instr, args, _ := strings.Cut(line.String(), " ")
		args = strings.TrimSpace(args)
		line.Reset()
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			f := strings.Fields(args)
			s := &stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			continue // ARG before the first FROM
		}
		s := stages[len(stages)-1]
		switch instr {
		case "USER":
			s.user = args
		case "ENTRYPOINT":
			s.entrypoint = nil
			if err := json.Unmarshal([]byte(args), &s.entrypoint); err != nil {
				t.Errorf("stage %s: ENTRYPOINT %s: not the exec form (a shell would be PID 1's child, and get no signal)", s.name, args)
			}
		case "COPY":
			s.copies = append(s.copies, args)
		case "RUN":
			s.runs = append(s.runs, args)
		}
	}
	return stages
}

// TestDockerfile: every image the Dockerfile makes (a stage with an
// ENTRYPOINT, the last one among them) runs sluice as a non-root user
// under tini, copied from a stage that installs Debian's tini; sluice is
// the static binary the build stage makes.
func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, "../Dockerfile")
	byName := map[string]*stage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	last := stages[len(stages)-1]
	if last.entrypoint == nil {
		t.Fatalf("the default image (stage %q) has no ENTRYPOINT", last.name)
	}
	images := 0
	for _, s := range stages {
		if s.entrypoint == nil {
			continue
		}
		images++
		if u, _, _ := strings.Cut(s.user, ":"); u == "" || u == "root" || u == "0" {
			t.Errorf("stage %s: USER %q: want a non-root user", s.name, s.user)
		}
		ep := s.entrypoint
		if len(ep) < 3 || !strings.HasPrefix(path.Base(ep[0]), "tini") || ep[1] != "--" || path.Base(ep[2]) != "sluice" {
			t.Errorf("stage %s: ENTRYPOINT %q: want [tini, --, sluice]: sluice does not reap orphans as PID 1", s.name, ep)
			continue
		}
		checkCopied(t, s, byName, ep[0], "tini-static", `apt-get install [^&]*\btini\b`)
		checkCopied(t, s, byName, ep[2], "sluice", `CGO_ENABLED=0 go build .*\./cmd/sluice`)
	}
	if images < 2 {
		t.Errorf("%d images, want 2: sluice alone and sluice with Node.js", images)
	}
}

// checkCopied fails unless s copies dst from a file named src of a stage
// one of whose RUNs matches run.
func checkCopied(t *testing.T, s *stage, stages map[string]*stage, dst, src, run string) {
	t.Helper()
	re := regexp.MustCompile(`^--from=(\S+)\s+(\S+)\s+(\S+)$`)
	for _, c := range s.copies {
		m := re.FindStringSubmatch(c)
		if m == nil || m[3] != dst || path.Base(m[2]) != src {
			continue
		}
		from := stages[m[1]]
		if from == nil {
			t.Errorf("stage %s: COPY --from=%s: no such stage", s.name, m[1])
			return
		}
		if !slices.ContainsFunc(from.runs, regexp.MustCompile(run).MatchString) {
			t.Errorf("stage %s: %s comes from stage %s, which does not run %s", s.name, dst, m[1], run)
		}
		return
	}
	t.Errorf("stage %s: %s is not copied from another stage's %s", s.name, dst, src)
}

// dockerignore is a .dockerignore's patterns, in order.
type dockerignore []struct {
	re     *regexp.Regexp
	negate bool
}

func readDockerignore(t *testing.T, file string) dockerignore {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d dockerignore
	for _, line := range strings.Split(string(data), "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		neg := strings.HasPrefix(p, "!")
		p = path.Clean(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"))
		var b strings.Builder
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**/"):
				b.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				b.WriteString(".*")
				i++
			case p[i] == '*':
				b.WriteString("[^/]*")
			case p[i] == '?':
				b.WriteString("[^/]")
			default:
				b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		d = append(d, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile("^" + b.String() + "$"), neg})
	}
	return d
}

// excludes reports whether file (relative to the context) is left out:
// the last pattern that matches it, or one of its directories, decides.
func (d dockerignore) excludes(file string) bool {
	out := false
	for _, p := range d {
		for dir := file; dir != "."; dir = path.Dir(dir) {
			if p.re.MatchString(dir) {
				out = !p.negate
				break
			}
		}
	}
	return out
}

// TestDockerignore: the build context keeps every file `go build
// ./cmd/sluice` reads (sources, embedded files, go.mod, go.sum), and
// leaves out what only bloats it.
func TestDockerignore(t *testing.T) {
	d := readDockerignore(t, "../.dockerignore")
	cmd := exec.Command("go", "list", "-e", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{range .IgnoredGoFiles}} {{.}}{{end}}{{range .SFiles}} {{.}}{{end}}{{"\n"}}{{end}}{{end}}`,
		"./cmd/sluice")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root = path.Dir(root)
	needed := []string{"go.mod", "go.sum"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		dir := strings.TrimPrefix(strings.TrimPrefix(f[0], root), "/")
		for _, name := range f[1:] {
			if !strings.HasSuffix(name, "_test.go") { // IgnoredGoFiles has tests too
				needed = append(needed, path.Join(dir, name))
			}
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found %d files: %q", len(needed), needed)
	}
	for _, f := range needed {
		if d.excludes(f) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", f)
		}
	}
	for _, f := range []string{".git/HEAD", "internal/eval/node/node_modules/react/index.js", "internal/eval/doc.go", "peers/go.mod", "sluice", "cmd/sluice/main_test.go"} {
		if !d.excludes(f) {
			t.Errorf(".dockerignore keeps %s in the build context", f)
		}
	}
}

// apacheSHA256 is the SHA-256 of the Apache License 2.0's text as
// apache.org serves it (LICENSE-2.0.txt without its first, empty line),
// its appendix's copyright line left as the placeholder.
const apacheSHA256 = "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"

func TestLicense(t *testing.T) {
	data, err := os.ReadFile("../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	const ours = "   Copyright 2026 The sluice authors\n"
	if !strings.Contains(string(data), ours) {
		t.Errorf("LICENSE: no line %q", ours)
	}
	text := strings.Replace(string(data), ours, "   Copyright [yyyy] [name of copyright owner]\n", 1)
	sum := sha256.Sum256([]byte(text))
	if got := hex.EncodeToString(sum[:]); got != apacheSHA256 {
		t.Errorf("LICENSE: not the Apache License 2.0's text (sha256 %s, want %s with our copyright line restored to the placeholder)", got, apacheSHA256)
	}
}
