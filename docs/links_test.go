package docs_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"
)

// inlineLink matches the target of an inline link or image, [text](target)
// or [text](target "title"); refLink a reference definition, [label]: target.
var (
	inlineLink = regexp.MustCompile(`\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// link is one relative link found in a Markdown file.
type link struct {
	line   int
	target string
}

// prose returns the lines of a Markdown text outside fenced code blocks,
// each with its 1-based line number.
func prose(text string) (lines []string, numbers []int) {
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		trimmed := strings.TrimLeft(l, " ")
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		lines = append(lines, l)
		numbers = append(numbers, n)
	}
	return lines, numbers
}

// relativeLinks returns the links of a Markdown text that point inside the
// repository: every target without a scheme.
func relativeLinks(text string) []link {
	var links []link
	lines, numbers := prose(text)
	for i, l := range lines {
		// A link inside backquotes is text, not a link.
		l = codeSpan.ReplaceAllString(l, "``")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
		if m := refLink.FindStringSubmatch(l); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") || strings.HasPrefix(t, "//") {
				continue
			}
			links = append(links, link{numbers[i], t})
		}
	}
	return links
}

// anchor returns the fragment GitHub gives a heading: its text without
// markup, lower-cased, every character but letters, digits, '_', '-' and
// spaces dropped, and spaces turned into hyphens.
func anchor(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors returns every fragment a Markdown text's headings define; a
// repeated heading gets -1, -2, ... as on GitHub.
func anchors(text string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	lines, _ := prose(text)
	for _, l := range lines {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := anchor(m[1])
		if n := seen[a]; n > 0 {
			set[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set
}

// brokenLinks checks every relative link of the Markdown files docs (paths
// in fsys, slash-separated) against the tracked files: a link must name a
// tracked file, or a directory holding one, inside the repository, and a
// fragment on a Markdown file must name one of its headings.
func brokenLinks(fsys fs.FS, docs []string, tracked map[string]bool) []string {
	isDir := func(p string) bool {
		for f := range tracked {
			if strings.HasPrefix(f, p+"/") {
				return true
			}
		}
		return false
	}
	headings := map[string]map[string]bool{}
	headingsOf := func(p string) (map[string]bool, error) {
		if h, ok := headings[p]; ok {
			return h, nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		headings[p] = anchors(string(data))
		return headings[p], nil
	}
	var broken []string
	for _, doc := range docs {
		data, err := fs.ReadFile(fsys, doc)
		if err != nil {
			broken = append(broken, fmt.Sprintf("%s: %v", doc, err))
			continue
		}
		for _, l := range relativeLinks(string(data)) {
			target, frag, _ := strings.Cut(l.target, "#")
			p := doc
			if target != "" {
				p = path.Clean(path.Join(path.Dir(doc), target))
			}
			where := fmt.Sprintf("%s:%d: link %s", doc, l.line, l.target)
			switch {
			case p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(target):
				broken = append(broken, where+" leaves the repository")
				continue
			case !tracked[p] && !(p == "." || isDir(p)):
				broken = append(broken, where+": no tracked file "+p)
				continue
			}
			if frag == "" || !strings.HasSuffix(p, ".md") {
				continue
			}
			h, err := headingsOf(p)
			if err != nil {
				broken = append(broken, fmt.Sprintf("%s: %v", where, err))
			} else if !h[frag] {
				broken = append(broken, fmt.Sprintf("%s: %s has no heading #%s", where, p, frag))
			}
		}
	}
	return broken
}

// gitFiles returns the files git tracks under root, slash-separated and
// relative to it.
func gitFiles(root string) (map[string]bool, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	files := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files[f] = true
		}
	}
	return files, nil
}

// trackedFiles returns the repository's tracked files, slash-separated and
// relative to its root, from git; outside a git checkout (an unpacked
// archive), every file under the root.
func trackedFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	files, err := gitFiles(root)
	if err == nil {
		return files
	}
	t.Logf("%v; checking the files on disk instead", err)
	files = map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRelativeLinksResolve keeps the repository's Markdown free of dead
// links: every relative link in a tracked .md file (README.md, docs/*.md,
// each package's README) names a tracked file, and every #fragment on a
// Markdown file names one of its headings. Output a run regenerates (the
// evaluation suite's -out directory) is not tracked, so a link to it fails.
func TestRelativeLinksResolve(t *testing.T) {
	tracked := trackedFiles(t, "..")
	var docs []string
	for f := range tracked {
		if strings.HasSuffix(f, ".md") && !strings.Contains(f, "node_modules/") {
			docs = append(docs, f)
		}
	}
	for _, must := range []string{"README.md", "docs/benchmarks.md", "docs/architecture.md"} {
		if !tracked[must] {
			t.Fatalf("%s is not among the tracked files; is the test run from docs/?", must)
		}
	}
	for _, b := range brokenLinks(os.DirFS(".."), docs, tracked) {
		t.Error(b)
	}
}

func TestBrokenLinksFindsEachKind(t *testing.T) {
	fsys := fstest.MapFS{
		"README.md": {Data: []byte("# Top\n\n## Soak: 10 minutes at 8x with 10,000 open connections (issue 11)\n\n" +
			"[ok](docs/a.md#results-for-limit) [ok](#top) [ok](docs/) [ok](https://example.com/x.md)\n" +
			"`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n" +
			"[gone](docs/bench/goodput.json) [bad anchor](docs/a.md#nope) [up](../x.md)\n" +
			"[self](#soak-10-minutes-at-8x-with-10000-open-connections-issue-11)\n" +
			"[ref]: docs/missing.svg\n")},
		"docs/a.md": {Data: []byte("## Results for `limit`\n")},
	}
	tracked := map[string]bool{"README.md": true, "docs/a.md": true}
	got := brokenLinks(fsys, []string{"README.md"}, tracked)
	want := []string{
		"README.md:10: link docs/bench/goodput.json: no tracked file docs/bench/goodput.json",
		"README.md:10: link docs/a.md#nope: docs/a.md has no heading #nope",
		"README.md:10: link ../x.md leaves the repository",
		"README.md:12: link docs/missing.svg: no tracked file docs/missing.svg",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("brokenLinks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestAnchorAsGitHub(t *testing.T) {
	for heading, want := range map[string]string{
		"Soak: 10 minutes at 8x with 10,000 open connections (issue 11)": "soak-10-minutes-at-8x-with-10000-open-connections-issue-11",
		"Compression (issue 13)":                  "compression-issue-13",
		"Newest first (`overload.adaptiveLifo`)":  "newest-first-overloadadaptivelifo",
		"Front vs nginx -> HAProxy, [Node](x.md)": "front-vs-nginx---haproxy-node",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}
